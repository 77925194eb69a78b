package redisstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// TestClusterNodeDownAtStart: a store built while one master is down (and
// not yet replaced: no replicas here) constructs, decides the rules whose
// slots live on the other masters, and fails only the rules of the dead
// master's slots, without ambiguity (nothing reached Redis).
func TestClusterNodeDownAtStart(t *testing.T) {
	t.Parallel() // its own redis-server; no package state, no timing
	c := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1, Timeout: time.Minute})
	ctx := context.Background()
	probe := newStore(t, newClusterClient(t, c.Addrs()), nil)
	hits := hitsInSlots(t, probe, c, 2, "down-", sluice.TokenBucket, sluice.PerHour(10))
	live := c.MasterOf(redisstore.SlotOf(redisstore.KeyOf(probe, hits[0])))
	dead := c.MasterOf(redisstore.SlotOf(redisstore.KeyOf(probe, hits[1])))
	if live == nil || dead == nil || live.Addr == dead.Addr {
		t.Fatalf("the hits' masters %v and %v are not two masters", live, dead)
	}
	dead.Kill()

	// The dead node first in the seed list: the client finds the slot map
	// through the others.
	addrs := slices.DeleteFunc(c.Addrs(), func(a string) bool { return a == dead.Addr })
	s := newStore(t, newClusterClient(t, append([]string{dead.Addr}, addrs...)), nil)

	out := make([]sluice.Result, 2)
	if err := s.Take(ctx, hits[:1], out[:1]); err != nil || !out[0].Allowed {
		t.Fatalf("a rule on a live master: %+v %v, want it decided", out[0], err)
	}
	err := s.TakePartial(ctx, hits, out)
	var pe *sluice.PartialError
	if !errors.As(err, &pe) || !slices.Equal(pe.Failed, []int{1}) {
		t.Fatalf("a request across a live and a dead master: %v, want a PartialError failing hit 1 only", err)
	}
	if sluice.IsAmbiguous(err) {
		t.Errorf("the dead master's failure %v is ambiguous: nothing reached it", err)
	}
	if !out[0].Allowed || out[0].Remaining != 8 {
		t.Errorf("the live rule's result %+v, want allowed with 8 left", out[0])
	}
	if err := s.Take(ctx, hits[1:], out[:1]); err == nil {
		t.Fatalf("a rule on the dead master was decided: %+v", out[0])
	}
}
