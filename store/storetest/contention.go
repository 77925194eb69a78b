package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// Contention shape: Clients separate clients, Goroutines goroutines on each,
// Attempts calls per goroutine, all on one bucket of capacity Capacity whose
// refill is too slow to matter while the test runs.
const (
	Clients    = 8
	Goroutines = 16
	Attempts   = 25
	Capacity   = 100
)

// contenders returns a harness at the suite's start time and the stores to
// race: [Clients] independent clients where the backend has them.
func contenders(t *testing.T, newHarness Factory) (Harness, []sluice.Store) {
	h := newHarness(t)
	h.SetTime(start())
	stores := []sluice.Store{h.Store}
	if h.Clients != nil {
		stores = h.Clients(t, Clients)
	}
	return h, stores
}

func testContention(t *testing.T, newHarness Factory) {
	h, stores := contenders(t, newHarness)
	limits := map[sluice.Algorithm]sluice.Limit{
		sluice.TokenBucket:   sluice.PerHour(1).WithBurst(Capacity),
		sluice.SlidingWindow: sluice.Per(Capacity, 24*time.Hour),
		sluice.FixedWindow:   sluice.Per(Capacity, 24*time.Hour),
		sluice.SlidingLog:    sluice.Per(Capacity, 24*time.Hour),
	}
	for alg, limit := range limits {
		t.Run(alg.String(), func(t *testing.T) {
			hit := sluice.Hit{Key: uniqueKey(t, "hot"), Limit: limit, Algorithm: alg, Cost: 1}
			admitted := CountAdmitted(t, stores, hit)
			t.Logf("%d clients × %d goroutines × %d attempts: %d admitted of capacity %d", len(stores), Goroutines, Attempts, admitted, Capacity)
			h.checkAdmitted(t, admitted, len(stores))
		})
	}
}

// CountAdmitted runs [Goroutines] goroutines on each store, each taking hit
// [Attempts] times, and returns how many calls were allowed. Errors fail t.
// Store tests use it to show that a deliberately non-atomic implementation
// over-admits, proving the contention test can fail.
func CountAdmitted(t *testing.T, stores []sluice.Store, hit sluice.Hit) int64 {
	t.Helper()
	var admitted, failed atomic.Int64
	var wg sync.WaitGroup
	for _, s := range stores {
		for range Goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				hits := []sluice.Hit{hit}
				out := make([]sluice.Result, 1)
				for range Attempts {
					if err := s.Take(context.Background(), hits, out); err != nil {
						failed.Add(1)
						continue
					}
					if out[0].Allowed {
						admitted.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d calls failed", n)
	}
	return admitted.Load()
}

// testMixedContention races one-hit and two-hit calls on one token bucket:
// a store may decide the two kinds differently (memstore takes no lock for
// one hit and locks for several), and neither may lose the other's
// consumption. Every two-hit call also hits a bucket of its own with room
// to spare, so whether it passes depends on the shared bucket alone.
func testMixedContention(t *testing.T, newHarness Factory) {
	h, stores := contenders(t, newHarness)
	hot := sluice.Hit{Key: uniqueKey(t, "hot"), Limit: sluice.PerHour(1).WithBurst(Capacity), Cost: 1}
	roomy := sluice.PerHour(1).WithBurst(Goroutines * Attempts)
	var admitted, failed atomic.Int64
	var wg sync.WaitGroup
	release := make(chan struct{}) // all start together, to overlap the most
	for si, s := range stores {
		for g := range Goroutines {
			hits := []sluice.Hit{hot}
			if g%2 == 1 {
				hits = append(hits, sluice.Hit{Key: uniqueKey(t, fmt.Sprint("own-", si, "-", g)), Limit: roomy, Cost: 1})
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				out := make([]sluice.Result, len(hits))
				<-release
				for range Attempts {
					if err := s.Take(context.Background(), hits, out); err != nil {
						failed.Add(1)
						continue
					}
					if sluice.Admitted(hits, out) {
						admitted.Add(1)
					}
				}
			}()
		}
	}
	close(release)
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d calls failed", n)
	}
	n := admitted.Load()
	t.Logf("one-hit and two-hit calls: %d admitted of capacity %d", n, Capacity)
	h.checkAdmitted(t, n, len(stores))
}

// checkAdmitted checks how many calls of a contention test passed on one
// bucket of [Capacity] raced from clients stores: exactly Capacity from
// an atomic store; from an atomic store of leases (see [Harness.Lease])
// never more, and less by at most what each client's lease may hold at
// the end.
func (h Harness) checkAdmitted(t *testing.T, admitted int64, clients int) {
	t.Helper()
	switch {
	case h.Atomic && h.Lease > 0 && (admitted > Capacity || admitted < Capacity-int64(clients)*h.Lease):
		t.Fatalf("admitted %d, want from %d to %d from %d clients holding leases of up to %d", admitted, Capacity-int64(clients)*h.Lease, Capacity, clients, h.Lease)
	case h.Atomic && h.Lease == 0 && admitted != Capacity:
		t.Fatalf("admitted %d, want exactly %d from an atomic store", admitted, Capacity)
	case admitted < 1:
		t.Fatalf("admitted nothing")
	}
}
