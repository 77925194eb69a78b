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

// TestConformanceCluster runs the conformance suite on a 3-master,
// 3-replica Redis Cluster: its multi-hit requests span slots, so they
// exercise one script per slot and the refunds of refused requests.
func TestConformanceCluster(t *testing.T) { storetest.Run(t, realCluster(t)) }

// TestConformanceClusterColocated runs the conformance suite on the cluster
// with every hit in one group: each request is one script call in one slot.
func TestConformanceClusterColocated(t *testing.T) {
	f := realCluster(t)
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

func (g grouped) Reset(ctx context.Context, hits []sluice.Hit) error {
	return g.s.Reset(ctx, group(hits))
}

// TestDifferentialMemstoreVsCluster replays the differential test's seeded
// sequences against memstore and the Redis store on a 3+3 cluster, with
// and without every hit in one group: multi-hit requests span slots (one
// script per slot, refunds when a slot refuses) or share one. Results must
// be identical at every step.
func TestDifferentialMemstoreVsCluster(t *testing.T) {
	c := redistest.StartCluster(t, redistest.ClusterOptions{})
	remembered := 0
	for _, colocated := range []bool{false, true} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("colocated=%v/seed=%d", colocated, seed), func(t *testing.T) {
				clock := storetest.NewClock(time.Now().Truncate(time.Hour))
				mem := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1})
				defer mem.Close()
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
