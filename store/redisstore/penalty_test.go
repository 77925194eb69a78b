package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// Penalties across instances (three stores on one Redis, on one fake
// clock): refusals answered by any instance count toward after; a block
// flooded on every instance costs Redis one call per instance per memory
// period (RememberRefusals, 1 s by default); a reset through one instance
// lifts the block there at once and on the others when their memory of it
// ends.
func TestPenaltyAcrossInstances(t *testing.T) {
	t.Parallel() // its own redis-server and clock
	srv := redistest.Start(t)
	clock := storetest.NewClock(time.Now())
	stores := make([]*redisstore.Store, 3)
	for i := range stores {
		stores[i] = newStore(t, newClient(t, srv.Addr), clock)
	}
	hit := sluice.Hit{Key: "penalty-across", Limit: sluice.PerMinute(1), Block: time.Hour, After: 3}
	take := func(i int) sluice.Result {
		t.Helper()
		var out [1]sluice.Result
		if err := stores[i].Take(context.Background(), []sluice.Hit{hit}, out[:]); err != nil {
			t.Fatal(err)
		}
		return out[0]
	}
	if r := take(0); !r.Allowed {
		t.Fatalf("the first request: %+v", r)
	}
	// Three refusals, one on each instance, each answered by Redis.
	for i := range 3 {
		r := take(i)
		if r.Allowed || r.Remembered || r.Blocked != (i == 2) || r.BlockStarted != (i == 2) {
			t.Fatalf("refusal %d of 3, on instance %d: %+v, want refused by the store, blocked at the third", i+1, i, r)
		}
		clock.Advance(time.Millisecond)
	}
	// A flood on every instance for five seconds: 20 requests each per
	// 100 ms.
	before := cmdCalls(t, srv.Addr, "evalsha")
	for range 50 {
		for i := range stores {
			for range 20 {
				if r := take(i); !r.Blocked || r.Allowed {
					t.Fatalf("instance %d during the block: %+v", i, r)
				}
			}
		}
		clock.Advance(100 * time.Millisecond)
	}
	calls := cmdCalls(t, srv.Addr, "evalsha") - before
	t.Logf("%d script calls for 3000 blocked requests", calls)
	if max := int64(len(stores) * 6); calls > max {
		t.Fatalf("%d script calls for 3000 blocked requests over 5 s on 3 instances, want at most %d: one per instance per second", calls, max)
	}
	if err := stores[0].Reset(context.Background(), []sluice.Hit{hit}); err != nil {
		t.Fatal(err)
	}
	if r := take(0); !r.Allowed {
		t.Fatalf("the instance that reset, right after it: %+v, want allowed", r)
	}
	clock.Advance(time.Second + time.Microsecond) // RememberRefusals' default
	// The bucket is empty again (instance 0 took its one request): refused
	// by the limit, decided by the store, not blocked.
	if r := take(1); r.Remembered || r.Blocked || r.Allowed {
		t.Fatalf("another instance, the memory's bound after the reset: %+v, want the block lifted", r)
	}
}

// A blocked bucket's key lives at least until its block ends, however
// soon its bucket is full again; a refusal that counts toward after keeps
// it until its counting period ends.
func TestPenaltyKeyLivesWithItsBlock(t *testing.T) {
	t.Parallel() // its own redis-server
	srv := redistest.Start(t)
	client := newClient(t, srv.Addr)
	s := newStore(t, client, nil) // the server's clock: keys expire in real time
	ctx := context.Background()
	pttl := func(what string) time.Duration {
		t.Helper()
		keys, err := client.Keys(ctx, "*").Result()
		if err != nil || len(keys) != 1 {
			t.Fatalf("%s: keys %q, %v, want the one bucket", what, keys, err)
		}
		d, err := client.PTTL(ctx, keys[0]).Result()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	out := make([]sluice.Result, 1)
	hit := sluice.Hit{Key: "penalty-ttl", Limit: sluice.PerMinute(60), Block: time.Hour, After: 2}
	big := hit
	big.Cost = 61 // never passes: a refusal
	for i, h := range []sluice.Hit{hit, big} {
		if err := s.Take(ctx, []sluice.Hit{h}, out); err != nil || out[0].Allowed != (i == 0) {
			t.Fatalf("request %d: %+v %v", i+1, out[0], err)
		}
	}
	// One refusal of two: the key lives until the limit's period (1 m)
	// ends, though the bucket alone is full again within a second.
	if d := pttl("one refusal counted"); d < 59*time.Second || d > time.Minute {
		t.Fatalf("one refusal counted: the key expires in %v, want about the limit's period (1 m)", d)
	}
	if err := s.Take(ctx, []sluice.Hit{big}, out); err != nil || !out[0].BlockStarted {
		t.Fatalf("the second refusal: %+v %v, want the block started", out[0], err)
	}
	if d := pttl("blocked"); d < time.Hour-time.Minute || d > time.Hour {
		t.Fatalf("blocked for an hour: the key expires in %v, want about an hour", d)
	}
}
