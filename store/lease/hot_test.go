package lease_test

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/lease"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// A Zipf-distributed stream over many keys: the heaviest keys turn hot
// within the first window, are then leased (escalation), and their
// backing calls per check drop; memory stays bounded.
func TestZipfHotKeysEscalate(t *testing.T) {
	back, clock := backing(t)
	back.keys = map[string]int{}
	rec := newRecorder()
	pol := &sluice.LeasePolicy{Rule: "ip", HotKeys: sluice.HotKeyPolicy{Threshold: 200, Lease: true}}
	s := newStore(t, back, lease.Config{Clock: clock, Observer: rec, Logger: quiet, SweepInterval: -1, TopK: 8})
	zipf := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.2, 1, 9_999)
	limit := sluice.PerSecond(5000)
	const perWindow = 20_000 // 50 µs apart: one second
	var requests [2]map[string]int
	var backingBefore map[string]int
	for w := range 2 {
		requests[w] = map[string]int{}
		if w == 1 {
			back.mu.Lock()
			backingBefore = clone(back.keys)
			back.mu.Unlock()
		}
		for range perWindow {
			key := fmt.Sprint("k", zipf.Uint64())
			requests[w][key]++
			take(t, s, sluice.Hit{Key: key, Limit: limit, Lease: pol})
			clock.Advance(50 * time.Microsecond)
		}
	}
	if rec.hot["lease"] == 0 {
		t.Fatal("no key turned hot")
	}
	// The top key: k0 (the Zipf mode). In the second window its backing
	// calls per check are what its leases cost.
	top := "k0"
	calls := back.keys[top] - backingBefore[top]
	ratio := float64(calls) / float64(requests[1][top])
	t.Logf("hot keys detected: %d; %s: %d checks in the second window, %d backing calls (%.3f per check)", rec.hot["lease"], top, requests[1][top], calls, ratio)
	if ratio > 0.05 {
		t.Fatalf("%s: %.3f backing calls per check once hot, want ≤ 0.05 (leased)", top, ratio)
	}
	// A cold key stays unleased: every check of it goes to the backing
	// store.
	cold := ""
	for k, n := range requests[1] {
		if n == 1 && requests[0][k] == 0 {
			cold = k
			break
		}
	}
	if cold != "" && back.keys[cold] != 1 {
		t.Fatalf("cold key %s: %d backing calls for 1 check", cold, back.keys[cold])
	}
	if rules, keys := lease.HotTracked(s); rules != 1 || keys > 8 {
		t.Fatalf("tracking %d rules and %d keys, want 1 rule and at most TopK = 8 keys", rules, keys)
	}
}

// How long until the top key is detected: with its share of the traffic,
// at most Threshold of its own checks; and a quiet window cools it.
func TestHotKeyDetectedWithinThreshold(t *testing.T) {
	back, clock := backing(t)
	rec := newRecorder()
	pol := &sluice.LeasePolicy{Rule: "ip", HotKeys: sluice.HotKeyPolicy{Threshold: 100, Lease: true}}
	s := newStore(t, back, lease.Config{Clock: clock, Observer: rec, Logger: quiet, SweepInterval: -1})
	h := sluice.Hit{Key: "hot", Limit: sluice.PerSecond(10_000), Lease: pol}
	for i := range 1000 {
		take(t, s, h)
		// Noise: distinct keys in between.
		take(t, s, sluice.Hit{Key: fmt.Sprint("noise", i), Limit: h.Limit, Lease: pol})
		if rec.hot["lease"] > 0 {
			if i+1 > 100 {
				t.Fatalf("detected after %d checks of the key, want at most the threshold 100", i+1)
			}
			// A whole window under the threshold: the key cools.
			clock.Advance(2 * time.Second)
			take(t, s, h)
			if rec.cooled["lease"] != 1 {
				t.Fatalf("after a quiet window: %d keys cooled, want 1", rec.cooled["lease"])
			}
			return
		}
	}
	t.Fatal("never detected")
}

// A flood of distinct keys: the lease table and the detectors stay
// within their bounds, and every check is still decided.
func TestFloodOfKeysStaysBounded(t *testing.T) {
	back, clock := backing(t)
	pol := &sluice.LeasePolicy{Rule: "ip", Enabled: true, HotKeys: sluice.HotKeyPolicy{Threshold: 3, Lease: true}}
	s := newStore(t, back, lease.Config{Clock: clock, MaxKeys: 1024, TopK: 16, Logger: quiet, SweepInterval: -1})
	for i := range 10_000 {
		if !take(t, s, sluice.Hit{Key: fmt.Sprint("flood", i), Limit: sluice.PerSecond(100), Lease: pol})[0].Allowed {
			t.Fatal("a fresh key was refused")
		}
		clock.Advance(time.Microsecond)
	}
	if n := s.Len(); n > 1024 {
		t.Fatalf("%d keys hold lease state, want at most MaxKeys = 1024", n)
	}
	if _, keys := lease.HotTracked(s); keys > 16 {
		t.Fatalf("%d keys tracked for hotness, want at most TopK = 16", keys)
	}
}

// Splitting: a hot key's checks spread over N sub-buckets at rate/N, and
// together they admit no more than the limit.
func TestHotKeySplit(t *testing.T) {
	back, clock := backing(t)
	back.keys = map[string]int{}
	rec := newRecorder()
	pol := &sluice.LeasePolicy{Rule: "sw", HotKeys: sluice.HotKeyPolicy{Threshold: 50, Split: 4}}
	s := newStore(t, back, lease.Config{Clock: clock, Observer: rec, Logger: quiet, SweepInterval: -1})
	clock.Set(clock.Now().Truncate(time.Second))
	h := sluice.Hit{Key: "hot", Limit: sluice.PerSecond(400), Algorithm: sluice.SlidingWindow, Lease: pol}
	admitted := [3]int{}
	for w := range 3 {
		for range 2000 { // 2000/s against 400/s
			if r := take(t, s, h)[0]; r.Allowed {
				admitted[w]++
			}
			clock.Advance(500 * time.Microsecond)
		}
	}
	if rec.hot["split"] == 0 {
		t.Fatal("the key never turned hot")
	}
	subs := 0
	for k, n := range back.keys {
		if strings.HasSuffix(k, "\x00hot") && n > 0 {
			subs++
		}
	}
	t.Logf("admitted per second: %v; sub-buckets used: %d", admitted, subs)
	if subs != 4 {
		t.Fatalf("%d sub-buckets used, want 4", subs)
	}
	// Once split, 4 sub-buckets of 100/s admit at most 400 per second
	// (the sliding window's bound per aligned window), and, the traffic
	// spread evenly, nearly that.
	if admitted[2] > 400 || admitted[2] < 360 {
		t.Fatalf("admitted %d in a second once split, want from 360 to 400", admitted[2])
	}
}

func clone(m map[string]int) map[string]int {
	c := make(map[string]int, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// Detectors dropped to make room for new rules (reloaded rule sets) cool
// their hot keys first: every key that turned hot cools.
func TestDroppedDetectorsCoolTheirKeys(t *testing.T) {
	back, clock := backing(t)
	rec := newRecorder()
	s := newStore(t, back, lease.Config{Clock: clock, Observer: rec, Logger: quiet, SweepInterval: -1, MaxRules: 2})
	for r := range 3 {
		pol := &sluice.LeasePolicy{Rule: fmt.Sprint("r", r), HotKeys: sluice.HotKeyPolicy{Threshold: 2, Lease: true}}
		for range 4 {
			take(t, s, sluice.Hit{Key: fmt.Sprint("k", r), Limit: sluice.PerSecond(1000), Lease: pol})
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.hot["lease"] != 3 {
		t.Fatalf("%d keys turned hot, want 3", rec.hot["lease"])
	}
	// The third rule dropped the first two detectors.
	if rec.cooled["lease"] != 2 {
		t.Fatalf("%d keys cooled, want the 2 of the dropped detectors", rec.cooled["lease"])
	}
}

// A hot key leased while over its limit stays hot: the checks its lease's
// remembered denial refuses in process count toward its hotness as the
// ones the backing store refused, so it does not cool and heat again
// window after window.
func TestOverLimitLeasedKeyStaysHot(t *testing.T) {
	back, clock := backing(t)
	rec := newRecorder()
	pol := &sluice.LeasePolicy{Rule: "ip", HotKeys: sluice.HotKeyPolicy{Threshold: 50, Lease: true}}
	// No memory of refusals: the lease's own denial answers.
	s := newStore(t, back, lease.Config{Clock: clock, Observer: rec, Logger: quiet, SweepInterval: -1, RememberRefusals: -1})
	clock.Set(clock.Now().Truncate(time.Second))
	h := sluice.Hit{Key: "flooded", Limit: sluice.PerSecond(40), Algorithm: sluice.FixedWindow, Lease: pol}
	for range 5000 { // 1000/s against 40/s, for 5 s
		take(t, s, h)
		clock.Advance(time.Millisecond)
	}
	if rec.hot["lease"] != 1 || rec.cooled["lease"] != 0 {
		t.Fatalf("turned hot %d times and cooled %d times, want hot once and never cooled", rec.hot["lease"], rec.cooled["lease"])
	}
}
