package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/redisstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// TestOnOneCluster runs the suites that leave a cluster as they found it
// (each on keys of its own) on one 3-master, 3-replica Redis Cluster,
// started once: the tests that kill or stop nodes start their own.
func TestOnOneCluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, redistest.ClusterOptions{})
	// The conformance suite: its multi-hit requests span slots, so they
	// exercise one script per slot and the refunds of refused requests.
	t.Run("Conformance", func(t *testing.T) { storetest.Run(t, clusterHarnesses(c)) })
	t.Run("ConformanceColocated", func(t *testing.T) { testConformanceColocated(t, c) })
	t.Run("DifferentialMemstore", func(t *testing.T) { testDifferentialMemstoreVsCluster(t, c) })
	t.Run("Ready", func(t *testing.T) { testReadyCluster(t, c) })
}

// testConformanceColocated runs the conformance suite on the cluster with
// every hit in one group: each request is one script call in one slot.
func testConformanceColocated(t *testing.T, c *redistest.Cluster) {
	f := clusterHarnesses(c)
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		h := f(t)
		h.Store = grouped{h.Store.(*redisstore.Store)}
		clients := h.Clients
		h.Clients = func(t *testing.T, n int) []sluice.Store {
			stores := clients(t, n)
			for i, s := range stores {
				stores[i] = grouped{s.(*redisstore.Store)}
			}
			return stores
		}
		return h
	})
}

// grouped is a store that puts every hit it is given in one group.
type grouped struct{ s *redisstore.Store }

const testGroup = "conformance"

func group(hits []sluice.Hit) []sluice.Hit {
	g := slices.Clone(hits)
	for i := range g {
		g[i].Group = testGroup
	}
	return g
}

func (g grouped) Take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	return g.s.Take(ctx, group(hits), out)
}

func (g grouped) Refund(ctx context.Context, refunds []sluice.Refund) error {
	r := slices.Clone(refunds)
	for i := range r {
		r[i].Hit.Group = testGroup
	}
	return g.s.Refund(ctx, r)
}

func (g grouped) RefreshSlots(ctx context.Context, refreshes []sluice.SlotRefresh) error {
	r := slices.Clone(refreshes) // each Receipt still points at the caller's
	for i := range r {
		r[i].Hit.Group = testGroup
	}
	return g.s.RefreshSlots(ctx, r)
}

func (g grouped) Reset(ctx context.Context, hits []sluice.Hit) error {
	return g.s.Reset(ctx, group(hits))
}

// testDifferentialMemstoreVsCluster replays the differential test's seeded
// sequences against memstore and the Redis store on a 3+3 cluster, with
// and without every hit in one group: multi-hit requests span slots (one
// script per slot, refunds when a slot refuses) or share one. Results must
// be identical at every step.
func testDifferentialMemstoreVsCluster(t *testing.T, c *redistest.Cluster) {
	remembered := 0
	for _, colocated := range []bool{false, true} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("colocated=%v/seed=%d", colocated, seed), func(t *testing.T) {
				clock := storetest.NewClock(time.Now().Truncate(time.Hour))
				mem := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1})
				defer mem.Close(context.Background())
				var red sluice.Store = newStore(t, newClusterClient(t, c.Addrs()), clock)
				if colocated {
					red = grouped{red.(*redisstore.Store)}
				}
				rng := rand.New(rand.NewPCG(seed, 0x5111ce))
				remembered += replay(t, rng, clock, mem, red, 400, fmt.Sprintf("cdiff%d-%d:", seed, time.Now().UnixNano()))
			})
		}
	}
	checkRemembered(t, remembered)
}
