package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/lease"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// leaseAll is the policy the conformance suite runs under: every leasable
// bucket leased.
var leaseAll = &sluice.LeasePolicy{Rule: "conformance", Enabled: true}

// conformanceK caps leases in the conformance suite, whose refund cases
// then compare answers within what a lease of that size can hold.
const conformanceK = 4

func TestConformanceOverMemstore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		clock := storetest.NewClock(time.Now())
		back := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1})
		t.Cleanup(func() { back.Close(context.Background()) })
		s := newStore(t, back, lease.Config{Clock: clock, Default: leaseAll, MaxLease: conformanceK, SweepInterval: -1})
		return storetest.Harness{Store: s, SetTime: clock.Set, Atomic: true, Lease: conformanceK}
	})
}

func newStore(t *testing.T, back sluice.Store, cfg lease.Config) *lease.Store {
	t.Helper()
	s, err := lease.New(back, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}
