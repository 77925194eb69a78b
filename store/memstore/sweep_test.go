package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/leakcheck"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

func TestSweepForgetsFullBuckets(t *testing.T) {
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	s := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1})
	defer s.Close(context.Background())
	out := make([]sluice.Result, 1)
	for _, k := range []string{"a", "b", "c"} {
		if err := s.Take(context.Background(), []sluice.Hit{{Key: k, Limit: sluice.PerSecond(1).WithBurst(10), Cost: 3}}, out); err != nil {
			t.Fatal(err)
		}
	}
	// A peek on a bucket never used stores nothing.
	if err := s.Take(context.Background(), []sluice.Hit{{Key: "peek", Limit: sluice.PerSecond(1), Peek: true}}, out); err != nil {
		t.Fatal(err)
	}
	if n := s.Len(); n != 3 {
		t.Fatalf("Len = %d, want 3", n)
	}
	clock.Advance(3*time.Second - time.Microsecond)
	if n := s.Sweep(); n != 0 {
		t.Fatalf("swept %d buckets before they were full", n)
	}
	clock.Advance(time.Microsecond)
	if n := s.Sweep(); n != 3 || s.Len() != 0 {
		t.Fatalf("swept %d, %d left; want 3 swept, none left", n, s.Len())
	}
}

// TestCloseStopsSweeperAndRefusesTakes closes a store whose sweeper has
// been seen working (it forgot a full bucket): the sweeper stops, and
// takes are refused.
func TestCloseStopsSweeperAndRefusesTakes(t *testing.T) {
	defer leakcheck.Check(t)()
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	s := memstore.New(memstore.Config{Clock: clock, SweepInterval: time.Millisecond})
	if err := s.Take(context.Background(), []sluice.Hit{{Key: "k", Limit: sluice.PerSecond(1), Cost: 1}}, make([]sluice.Result, 1)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour) // the bucket is full again: the next sweep forgets it
	for start := time.Now(); s.Len() != 0; time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the sweeper did not forget a full bucket within 10s") // a ceiling against hangs only
		}
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	err := s.Take(context.Background(), []sluice.Hit{{Key: "k", Limit: sluice.PerSecond(1), Cost: 1}}, make([]sluice.Result, 1))
	if !errors.Is(err, sluice.ErrClosed) {
		t.Fatalf("Take after Close: %v, want ErrClosed", err)
	}
}

// TestSweepRacingWithTakes releases a sweep and several takes of a whole
// bucket's capacity at the same moment, round after round, with the bucket
// full again at the start of each round (so the sweep may forget it while
// the takes decide on it). Single-hit takes and two-hit takes (which lock
// and freeze the bucket) are mixed. In every round exactly one take may
// pass: a decision written to a bucket the sweeper had already forgotten,
// or lost to a concurrent decision, would let a second one pass.
func TestSweepRacingWithTakes(t *testing.T) {
	const (
		rounds   = 500
		takers   = 4
		capacity = 5
	)
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	s := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1})
	defer s.Close(context.Background())
	limit := sluice.PerSecond(capacity)
	roomy := sluice.PerSecond(1_000_000)
	for name, key := range map[string]string{"short key": "hot", "long key": strings.Repeat("k", 200)} {
		t.Run(name, func(t *testing.T) {
			swept := 0
			for round := range rounds {
				clock.Advance(time.Second) // full again: the sweep may forget it
				var admitted atomic.Int64
				var wg sync.WaitGroup
				release := make(chan struct{})
				for i := range takers {
					hits := []sluice.Hit{{Key: key, Limit: limit, Cost: capacity}}
					if i%2 == 1 {
						hits = append(hits, sluice.Hit{Key: fmt.Sprint("other-", i), Limit: roomy, Cost: 1})
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						out := make([]sluice.Result, len(hits))
						<-release
						if err := s.Take(context.Background(), hits, out); err != nil {
							t.Error(err)
						}
						if sluice.Admitted(hits, out) {
							admitted.Add(1)
						}
					}()
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-release
					swept += s.Sweep()
				}()
				close(release)
				wg.Wait()
				if n := admitted.Load(); n != 1 {
					t.Fatalf("round %d: %d of %d takes passed, want exactly 1", round, n, takers)
				}
			}
			t.Logf("%d rounds; the sweeps forgot %d buckets", rounds, swept)
		})
	}
}
