package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// uniqueKey returns a key no other test uses, so stores that share a
// backend across subtests cannot leak state between them.
func uniqueKey(t *testing.T, what string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return t.Name() + "/" + what + "/" + hex.EncodeToString(b[:])
}

func testMultiRuleDenial(t *testing.T, newHarness Factory) {
	h := newHarness(t)
	h.SetTime(start())
	loose := sluice.Hit{Key: uniqueKey(t, "loose"), Limit: sluice.PerSecond(10).WithBurst(5), Cost: 1}
	tight := sluice.Hit{Key: uniqueKey(t, "tight"), Limit: sluice.PerHour(1), Cost: 1}
	third := sluice.Hit{Key: uniqueKey(t, "third"), Limit: sluice.PerSecond(10).WithBurst(5), Cost: 1}

	res := take(t, h.Store, loose, tight, third)
	if !sluice.Admitted([]sluice.Hit{loose, tight, third}, res) || res[0].Remaining != 4 || res[1].Remaining != 0 || res[2].Remaining != 4 {
		t.Fatalf("first request: %+v", res)
	}
	res = take(t, h.Store, loose, tight, third)
	if sluice.Admitted([]sluice.Hit{loose, tight, third}, res) {
		t.Fatalf("second request admitted although the second rule denies: %+v", res)
	}
	if !res[0].Allowed || res[0].Remaining != 4 || res[1].Allowed || res[1].RetryAfter != time.Hour || !res[2].Allowed || res[2].Remaining != 4 {
		t.Fatalf("second request: want the passing rules to report 4 remaining without consuming, got %+v", res)
	}
	if got := remaining(t, h.Store, loose.Key, loose.Limit); got != 4 {
		t.Fatalf("first rule after a denied request: remaining %d, want 4 (a denied request consumed)", got)
	}
	if got := remaining(t, h.Store, third.Key, third.Limit); got != 4 {
		t.Fatalf("third rule after a denied request: remaining %d, want 4", got)
	}
}

func testShadow(t *testing.T, newHarness Factory) {
	h := newHarness(t)
	now := start()
	h.SetTime(now)
	enforce := sluice.Hit{Key: uniqueKey(t, "enforce"), Limit: sluice.PerSecond(1).WithBurst(5), Cost: 1}
	shadow := sluice.Hit{Key: uniqueKey(t, "shadow"), Limit: sluice.PerSecond(1), Cost: 1, Shadow: true}
	hits := []sluice.Hit{shadow, enforce}

	res := take(t, h.Store, hits...)
	if !sluice.Admitted(hits, res) || !res[0].Allowed || res[0].Remaining != 0 || res[1].Remaining != 4 {
		t.Fatalf("first request: %+v", res)
	}
	res = take(t, h.Store, hits...)
	if !sluice.Admitted(hits, res) {
		t.Fatalf("a shadow rule that denies blocked the request: %+v", res)
	}
	if res[0].Allowed || res[0].RetryAfter != time.Second || res[1].Remaining != 3 {
		t.Fatalf("second request: want the shadow rule denied and the enforcing rule consumed, got %+v", res)
	}
	// The shadow bucket did not consume when it denied: one second later it
	// holds exactly one token again, not a debt.
	h.SetTime(now.Add(time.Second))
	if got := remaining(t, h.Store, shadow.Key, shadow.Limit); got != 1 {
		t.Fatalf("shadow bucket after it denied: remaining %d, want 1", got)
	}

	// A request refused by an enforcing rule consumes nothing, not even on
	// a shadow rule that passed.
	tight := sluice.Hit{Key: uniqueKey(t, "tight"), Limit: sluice.PerHour(1), Cost: 1}
	take(t, h.Store, tight)
	res = take(t, h.Store, shadow, tight)
	if sluice.Admitted([]sluice.Hit{shadow, tight}, res) || !res[0].Allowed {
		t.Fatalf("third request: %+v", res)
	}
	if got := remaining(t, h.Store, shadow.Key, shadow.Limit); got != 1 {
		t.Fatalf("shadow bucket consumed inside a refused request: remaining %d, want 1", got)
	}
}

func testSameBucketTwice(t *testing.T, newHarness Factory) {
	h := newHarness(t)
	h.SetTime(start())
	hit := sluice.Hit{Key: uniqueKey(t, "twice"), Limit: sluice.PerMinute(3), Cost: 1}
	res := take(t, h.Store, hit, hit)
	if !res[0].Allowed || res[0].Remaining != 2 || !res[1].Allowed || res[1].Remaining != 1 {
		t.Fatalf("two hits on one bucket: %+v", res)
	}
	big := hit
	big.Cost = 2
	res = take(t, h.Store, hit, big)
	if sluice.Admitted([]sluice.Hit{hit, big}, res) || !res[0].Allowed || res[1].Allowed {
		t.Fatalf("second hit should see the first one's consumption and deny: %+v", res)
	}
	if got := remaining(t, h.Store, hit.Key, hit.Limit); got != 1 {
		t.Fatalf("after a refused request: remaining %d, want 1", got)
	}
}

func testKeyIsolation(t *testing.T, newHarness Factory) {
	h := newHarness(t)
	h.SetTime(start())
	base := uniqueKey(t, "iso")
	keys := []string{
		base,
		base + "{tag}",
		"{" + base + "}",
		base + "\r\nSET x y",
		base + "\x00",
		base + "\xff\xfe\xfd",
		base + strings.Repeat("x", 1<<20),
		base + strings.Repeat("x", 1<<20-1) + "y",
	}
	l := sluice.PerHour(2)
	for i, k := range keys {
		res := take(t, h.Store, sluice.Hit{Key: k, Limit: l, Cost: 2})
		if !res[0].Allowed {
			t.Fatalf("key %d: the first request was denied: another key's hits reached this bucket", i)
		}
	}
	for i, k := range keys {
		if got := remaining(t, h.Store, k, l); got != 0 {
			t.Fatalf("key %d: remaining %d, want 0", i, got)
		}
	}
}

func testInvalid(t *testing.T, newHarness Factory) {
	h := newHarness(t)
	h.SetTime(start())
	good := sluice.Hit{Key: uniqueKey(t, "good"), Limit: sluice.PerMinute(5), Cost: 1}
	cases := []struct {
		name string
		hit  sluice.Hit
		want error
	}{
		{"negative cost", sluice.Hit{Key: "k", Limit: sluice.PerMinute(5), Cost: -1}, sluice.ErrInvalidHit},
		{"empty key", sluice.Hit{Limit: sluice.PerMinute(5), Cost: 1}, sluice.ErrInvalidHit},
		{"unknown algorithm", sluice.Hit{Key: "k", Limit: sluice.PerMinute(5), Cost: 1, Algorithm: 200}, sluice.ErrInvalidHit},
		{"zero limit", sluice.Hit{Key: "k", Cost: 1}, sluice.ErrInvalidLimit},
	}
	for _, tc := range cases {
		out := make([]sluice.Result, 2)
		err := h.Store.Take(context.Background(), []sluice.Hit{good, tc.hit}, out)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := h.Store.Take(context.Background(), []sluice.Hit{good}, nil); !errors.Is(err, sluice.ErrInvalidHit) {
		t.Errorf("no room for results: err = %v, want ErrInvalidHit", err)
	}
	if got := remaining(t, h.Store, good.Key, good.Limit); got != 5 {
		t.Fatalf("a refused call consumed: remaining %d, want 5", got)
	}
}

func testClockBackwards(t *testing.T, newHarness Factory) {
	h := newHarness(t)
	now := start()
	h.SetTime(now)
	hit := sluice.Hit{Key: uniqueKey(t, "skew"), Limit: sluice.PerSecond(1).WithBurst(2), Cost: 1}
	take(t, h.Store, hit)
	take(t, h.Store, hit)
	// The clock jumps back 10 s (a failover to a node whose clock lags):
	// no tokens are minted and nothing goes negative.
	h.SetTime(now.Add(-10 * time.Second))
	res := take1(t, h.Store, hit)
	if res.Allowed || res.Remaining != 0 || res.RetryAfter != 11*time.Second {
		t.Fatalf("after the clock went back 10 s: %+v, want denied with retry-after 11s", res)
	}
	// And forward an hour: full capacity, never more.
	h.SetTime(now.Add(time.Hour))
	if got := remaining(t, h.Store, hit.Key, hit.Limit); got != 2 {
		t.Fatalf("an hour later: remaining %d, want the capacity 2", got)
	}
}
