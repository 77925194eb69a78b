package redisstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// killBeforeRefund kills a node just before the first pipeline carrying a
// refund script goes out.
type killBeforeRefund struct {
	once sync.Once
	kill func()
}

func (k *killBeforeRefund) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (k *killBeforeRefund) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (k *killBeforeRefund) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if a := c.Args(); len(a) > 1 && a[1] == redisstore.RefundSHA() {
				k.once.Do(k.kill)
			}
		}
		return next(ctx, cmds)
	}
}

// TestClusterRefundLostWithItsNode: a cross-slot request is refused by one
// slot, and the master of a slot that passed dies between the take and the
// refund. The request is still answered (refused), the failed refund is
// counted and never retried, and once the replica is promoted the bucket
// has lost at most that request's cost.
func TestClusterRefundLostWithItsNode(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, redistest.ClusterOptions{})
	clock := storetest.NewClock(time.Now().Truncate(time.Hour).Add(5 * time.Minute))
	client := newClusterClient(t, c.Addrs())
	s := newStore(t, client, clock)
	ctx := context.Background()
	hits := hitsInSlots(t, s, c, 2, "lost-", sluice.TokenBucket, sluice.PerHour(5))
	// The refusing bucket is the larger: the slot that passes is decided
	// first, or beside it, but never skipped.
	hits[1].Limit = sluice.PerHour(10)
	out := make([]sluice.Result, 2)
	for i, n := range []int{1, 10} {
		for range n {
			if err := s.Take(ctx, hits[i:i+1], out[:1]); err != nil || !out[0].Allowed {
				t.Fatalf("first takes of %d: %+v %v", i, out[0], err)
			}
		}
	}
	slot := redisstore.SlotOf(redisstore.KeyOf(s, hits[0]))
	victim := c.MasterOf(slot)
	// The replica has the first take before the request: what the kill
	// can lose is the request's own.
	if err := redistest.WaitReplicated(victim.Addr, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	client.AddHook(&killBeforeRefund{kill: victim.Kill})

	if err := s.Take(ctx, hits, out); err != nil {
		t.Fatalf("the refused request failed: %v", err)
	}
	if sluice.Admitted(hits, out) {
		t.Fatalf("admitted: %+v", out)
	}
	if got := redisstore.RefundFailures(s); got != 1 {
		t.Fatalf("%d refund failures counted, want 1", got)
	}
	c.WaitFailover(slot, 20*time.Second)
	var rem int64
	deadline := time.Now().Add(5 * time.Second)
	for { // the store finds the promoted replica
		res := make([]sluice.Result, 1)
		h := hits[0]
		h.Peek = true
		err := s.Take(ctx, []sluice.Hit{h}, res)
		if err == nil {
			rem = res[0].Remaining
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bucket's slot never came back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("remaining after the lost refund: %d (4 before the request, cost 1)", rem)
	if rem < 3 || rem > 4 {
		t.Fatalf("remaining %d, want 3 (the refund lost) or 4 (the take lost with the node too)", rem)
	}
}
