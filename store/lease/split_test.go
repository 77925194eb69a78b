package lease_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/lease"
)

func TestSplitLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit sluice.Limit
		alg   sluice.Algorithm
		n     int
		cost  int64
		want  sluice.Limit
		ok    bool
	}{
		{"even", sluice.PerSecond(400), sluice.FixedWindow, 4, 1, sluice.PerSecond(100), true},
		{"token bucket burst", sluice.PerSecond(400).WithBurst(800), sluice.TokenBucket, 4, 1, sluice.PerSecond(100).WithBurst(200), true},
		{"rate below n", sluice.PerSecond(10), sluice.FixedWindow, 64, 1, sluice.Limit{}, false},
		{"rate equal to n", sluice.PerSecond(64), sluice.FixedWindow, 64, 1, sluice.PerSecond(1), true},
		{"capacity below n", sluice.PerSecond(100).WithBurst(3), sluice.TokenBucket, 4, 1, sluice.Limit{}, false},
		{"cost above a sub-bucket", sluice.PerSecond(400), sluice.FixedWindow, 4, 101, sluice.Limit{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := lease.SplitLimit(tc.limit, tc.alg, tc.n, tc.cost)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("SplitLimit = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
			if ok && got.Rate*int64(tc.n) > tc.limit.Rate {
				t.Fatalf("%d sub-buckets of rate %d exceed the rate %d", tc.n, got.Rate, tc.limit.Rate)
			}
		})
	}
}

// A hot key whose limit cannot be split is not: it keeps its one bucket
// and its limit.
func TestSplitNeverMultipliesTheLimit(t *testing.T) {
	back, clock := backing(t)
	pol := &sluice.LeasePolicy{Rule: "tiny", HotKeys: sluice.HotKeyPolicy{Threshold: 5, Split: 64}}
	s := newStore(t, back, lease.Config{Clock: clock, Logger: quiet, SweepInterval: -1})
	clock.Set(clock.Now().Truncate(time.Second))
	h := sluice.Hit{Key: "tiny", Limit: sluice.PerSecond(10), Algorithm: sluice.FixedWindow, Lease: pol}
	admitted := 0
	for range 3 {
		admitted = 0
		for range 1000 {
			if take(t, s, h)[0].Allowed {
				admitted++
			}
			clock.Advance(time.Millisecond)
		}
	}
	if admitted > 10 {
		t.Fatalf("admitted %d in a second at 10/s split 64, want at most 10", admitted)
	}
}

// Reset of a split key resets its sub-buckets too and cools the key.
func TestResetSplitKey(t *testing.T) {
	back, clock := backing(t)
	rec := newRecorder()
	pol := &sluice.LeasePolicy{Rule: "split", HotKeys: sluice.HotKeyPolicy{Threshold: 5, Split: 4}}
	s := newStore(t, back, lease.Config{Clock: clock, Observer: rec, Logger: quiet, SweepInterval: -1})
	clock.Set(clock.Now().Truncate(time.Second))
	h := sluice.Hit{Key: "hot", Limit: sluice.PerSecond(40), Algorithm: sluice.FixedWindow, Lease: pol}
	for range 200 {
		take(t, s, h)
	}
	if rec.hot["split"] != 1 {
		t.Fatalf("%d keys turned hot, want 1", rec.hot["split"])
	}
	subs := make([]sluice.Hit, 4)
	for i := range subs {
		subs[i] = sluice.Hit{Key: fmt.Sprint("\x00split", i, "\x00hot"), Limit: sluice.PerSecond(10), Algorithm: sluice.FixedWindow}
		if got := peek(t, back, subs[i]); got != 0 {
			t.Fatalf("sub-bucket %d holds %d before the reset, want 0 (spent)", i, got)
		}
	}
	if err := s.Reset(context.Background(), []sluice.Hit{h}); err != nil {
		t.Fatal(err)
	}
	for i := range subs {
		if got := peek(t, back, subs[i]); got != 10 {
			t.Fatalf("sub-bucket %d holds %d after the reset, want 10", i, got)
		}
	}
	if rec.cooled["split"] != 1 {
		t.Fatalf("%d keys cooled on reset, want 1", rec.cooled["split"])
	}
	if _, keys := lease.HotTracked(s); keys != 0 {
		t.Fatalf("%d keys tracked after the reset, want 0", keys)
	}
}
