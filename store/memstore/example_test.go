package memstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// A store on a manual clock, as tests use it: time moves only when the test
// says so, so nothing sleeps.
func ExampleNew() {
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	store := memstore.New(memstore.Config{
		Clock:         clock,
		SweepInterval: -1, // no background sweeper; call Sweep instead
	})
	defer store.Close(context.Background())

	hits := []sluice.Hit{{Key: "client-1", Limit: sluice.PerSecond(2), Cost: 1}}
	out := make([]sluice.Result, 1)
	for _, step := range []time.Duration{0, 0, 0, 500 * time.Millisecond} {
		clock.Advance(step)
		if err := store.Take(context.Background(), hits, out); err != nil {
			panic(err)
		}
		fmt.Printf("+%-6v allowed=%-5v remaining=%d retry-after=%v\n", step, out[0].Allowed, out[0].Remaining, out[0].RetryAfter)
	}
	// Output:
	// +0s     allowed=true  remaining=1 retry-after=0s
	// +0s     allowed=true  remaining=0 retry-after=0s
	// +0s     allowed=false remaining=0 retry-after=500ms
	// +500ms  allowed=true  remaining=0 retry-after=0s
}

// All the hits of one call are decided together: when one enforcing hit
// is denied, none of them consumes anything.
func ExampleStore_Take() {
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock})
	defer store.Close(context.Background())

	hits := []sluice.Hit{
		{Key: "burst:alice", Limit: sluice.PerSecond(2), Cost: 1},
		{Key: "hourly:alice", Limit: sluice.PerHour(3), Cost: 1},
	}
	out := make([]sluice.Result, len(hits))
	request := func(n int) {
		if err := store.Take(context.Background(), hits, out); err != nil {
			panic(err)
		}
		fmt.Printf("request %d: admitted=%-5v burst: allowed=%-5v remaining=%d  hourly: allowed=%-5v remaining=%d\n",
			n, sluice.Admitted(hits, out), out[0].Allowed, out[0].Remaining, out[1].Allowed, out[1].Remaining)
	}
	request(1)
	request(2)
	request(3) // the burst is spent: the hourly bucket keeps its last unit
	clock.Advance(time.Second)
	request(4)
	request(5) // the hourly bucket is spent: the burst bucket is not charged
	// Output:
	// request 1: admitted=true  burst: allowed=true  remaining=1  hourly: allowed=true  remaining=2
	// request 2: admitted=true  burst: allowed=true  remaining=0  hourly: allowed=true  remaining=1
	// request 3: admitted=false burst: allowed=false remaining=0  hourly: allowed=true  remaining=1
	// request 4: admitted=true  burst: allowed=true  remaining=1  hourly: allowed=true  remaining=0
	// request 5: admitted=false burst: allowed=true  remaining=1  hourly: allowed=false remaining=0
}

// Buckets that are full again hold no information; the sweeper, or Sweep,
// forgets them.
func ExampleStore_Sweep() {
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1})
	defer store.Close(context.Background())

	out := make([]sluice.Result, 1)
	for _, key := range []string{"a", "b", "c"} {
		hits := []sluice.Hit{{Key: key, Limit: sluice.PerMinute(10), Cost: 1}}
		if err := store.Take(context.Background(), hits, out); err != nil {
			panic(err)
		}
	}
	fmt.Println("buckets:", store.Len())
	clock.Advance(out[0].ResetAfter) // 6 s: one unit back, every bucket full
	fmt.Println("forgot:", store.Sweep())
	fmt.Println("buckets:", store.Len())
	// Output:
	// buckets: 3
	// forgot: 3
	// buckets: 0
}

// A bounded store: at its bound, a new key evicts a bucket, which is full
// again the next time its key is used.
func ExampleConfig_maxBuckets() {
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1, MaxBuckets: 2})
	defer store.Close(context.Background())

	out := make([]sluice.Result, 1)
	for _, key := range []string{"a", "b", "c"} {
		hits := []sluice.Hit{{Key: key, Limit: sluice.PerMinute(10), Cost: 5}}
		if err := store.Take(context.Background(), hits, out); err != nil {
			panic(err)
		}
	}
	fmt.Printf("held %d, evicted %d\n", store.Len(), store.Evicted())
	// Output:
	// held 2, evicted 1
}
