package memstore_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

func newHarness(t *testing.T) storetest.Harness {
	clock := storetest.NewClock(time.Now())
	s := memstore.New(memstore.Config{Clock: clock})
	t.Cleanup(func() { s.Close() })
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
