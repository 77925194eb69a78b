package memstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

func newHarness(t *testing.T) storetest.Harness {
	clock := storetest.NewClock(time.Now())
	s := memstore.New(memstore.Config{Clock: clock})
	t.Cleanup(func() { s.Close(context.Background()) })
	return storetest.Harness{
		Store:   s,
		SetTime: clock.Set,
		Atomic:  true,
		// Eight limiter instances in one process share one memstore.
		Clients: func(t *testing.T, n int) []sluice.Store {
			stores := make([]sluice.Store, n)
			for i := range stores {
				stores[i] = s
			}
			return stores
		},
	}
}

func TestConformance(t *testing.T) { storetest.Run(t, newHarness) }

// TestLimitsSharingAMemoSlotDoNotAllocate alternates two limits that the
// memo of validated limits files under the same slot: a miss must not
// allocate a new entry every time (at most one in memoPatience calls).
func TestLimitsSharingAMemoSlotDoNotAllocate(t *testing.T) {
	s := memstore.New(memstore.Config{SweepInterval: -1})
	defer s.Close(context.Background())
	a := []sluice.Hit{{Key: "k1", Limit: sluice.PerSecond(1000), Cost: 1}}
	b := []sluice.Hit{{Key: "k2", Limit: sluice.PerSecond(1000 ^ 64), Cost: 1}} // the same slot
	out := make([]sluice.Result, 1)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		_ = s.Take(ctx, a, out)
		_ = s.Take(ctx, b, out)
	})
	if allocs >= 1 {
		t.Fatalf("%.1f allocations per pair of calls, want none (rounded down)", allocs)
	}
}
