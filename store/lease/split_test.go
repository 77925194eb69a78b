package lease_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/lease"
	"github.com/sluicehq/sluice/store/storetest"
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

// A key flooded while over its limit turns hot and splits, though the
// lease store's memory of refusals answers most of its checks with no
// backing call, through Take or, as the middleware first tries,
// TakeLocal: those checks count toward its hotness as the ones the
// backing store refused.
func TestOverLimitKeyTurnsHotAndSplits(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name string
		take func(s *lease.Store, hits []sluice.Hit, out []sluice.Result) error
	}{
		{"Take", func(s *lease.Store, hits []sluice.Hit, out []sluice.Result) error {
			return s.Take(context.Background(), hits, out)
		}},
		{"TakeLocal", func(s *lease.Store, hits []sluice.Hit, out []sluice.Result) error {
			if s.TakeLocal(hits, out) {
				return nil
			}
			return s.Take(context.Background(), hits, out)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
			back := &counting{Refunder: redisStore(t, srv.Addr, clock), keys: map[string]int{}}
			rec := newRecorder()
			pol := &sluice.LeasePolicy{Rule: "flood", HotKeys: sluice.HotKeyPolicy{Threshold: 50, Split: 4}}
			s := newStore(t, back, lease.Config{Clock: clock, Observer: rec, Logger: quiet, SweepInterval: -1}) // refusals remembered: 1 s
			// 40/s flooded at 1000/s: 40 checks a window reach Redis, fewer
			// than the threshold; the other 960 are refused in process.
			key := "flooded-" + tc.name
			hits := []sluice.Hit{{Key: key, Limit: sluice.PerSecond(40), Algorithm: sluice.FixedWindow, Lease: pol}}
			out := make([]sluice.Result, 1)
			remembered := 0
			for range 3000 {
				if err := tc.take(s, hits, out); err != nil {
					t.Fatal(err)
				}
				if out[0].Remembered {
					remembered++
				}
				clock.Advance(time.Millisecond)
			}
			if remembered == 0 {
				t.Fatal("no check was refused from the memory of refusals: the test floods nothing")
			}
			if rec.hot["split"] != 1 {
				t.Fatalf("%d keys turned hot, want 1: the flooded key", rec.hot["split"])
			}
			back.mu.Lock()
			defer back.mu.Unlock()
			subs := 0
			for k, n := range back.keys {
				if strings.HasSuffix(k, "\x00"+key) && n > 0 {
					subs++
				}
			}
			if subs != 4 {
				t.Fatalf("%d sub-buckets used, want 4", subs)
			}
		})
	}
}
