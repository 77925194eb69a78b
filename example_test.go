package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// Limits are built with a constructor and, when the capacity should differ
// from the rate, WithBurst.
func ExampleLimit() {
	for _, l := range []sluice.Limit{
		sluice.PerSecond(10),
		sluice.PerMinute(100),
		sluice.PerHour(1000).WithBurst(50),
		sluice.Per(3, 1500*time.Millisecond),
		sluice.PerSecond(10).WithBurst(10), // a burst equal to the rate is the default
	} {
		fmt.Printf("%-16v capacity %4d, one event every %v\n", l, l.Capacity(), time.Duration(l.IntervalMicros())*time.Microsecond)
	}
	// Output:
	// 10/1s            capacity   10, one event every 100ms
	// 100/1m           capacity  100, one event every 600ms
	// 1000/1h burst 50 capacity   50, one event every 3.6s
	// 3/1.5s           capacity    3, one event every 500ms
	// 10/1s            capacity   10, one event every 100ms
}

// Validate says why a limit cannot be enforced. Rules call it when they are
// loaded, so a bad limit never reaches a store.
func ExampleLimit_Validate() {
	for _, l := range []sluice.Limit{
		sluice.PerMinute(100),
		sluice.PerMinute(0),
		sluice.Per(10, 500*time.Microsecond),
		sluice.PerSecond(10).WithBurst(-1),
	} {
		err := l.Validate()
		fmt.Println(errors.Is(err, sluice.ErrInvalidLimit), err)
	}
	// Output:
	// false <nil>
	// true sluice: invalid limit: rate 0: must be at least 1
	// true sluice: invalid limit: period 500µs: must be at least 1ms
	// true sluice: invalid limit: burst -1: must not be negative
}

// A Store decides hits. Here the in-process store, on a clock that moves
// only when told, decides a request of cost 1 against 3 per minute, four
// times, then once more after the wait it asked for.
func ExampleStore() {
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock})
	defer store.Close(context.Background())

	hits := []sluice.Hit{{Key: "per-ip:192.0.2.1", Limit: sluice.PerMinute(3), Cost: 1}}
	out := make([]sluice.Result, len(hits))
	take := func() {
		if err := store.Take(context.Background(), hits, out); err != nil {
			panic(err) // a store failure, never a denial
		}
		r := out[0]
		fmt.Printf("allowed=%-5v remaining=%d retry-after=%v reset-after=%v\n", r.Allowed, r.Remaining, r.RetryAfter, r.ResetAfter)
	}
	for range 4 {
		take()
	}
	clock.Advance(out[0].RetryAfter)
	take()
	// Output:
	// allowed=true  remaining=2 retry-after=0s reset-after=20s
	// allowed=true  remaining=1 retry-after=0s reset-after=40s
	// allowed=true  remaining=0 retry-after=0s reset-after=1m0s
	// allowed=false remaining=0 retry-after=20s reset-after=1m0s
	// allowed=true  remaining=0 retry-after=0s reset-after=1m0s
}

// Admitted combines the results of a request's hits: the request passes
// when every enforcing hit passed. A shadow hit only reports.
func ExampleAdmitted() {
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock})
	defer store.Close(context.Background())

	hits := []sluice.Hit{
		{Key: "per-user:alice", Limit: sluice.PerMinute(2), Cost: 1},
		{Key: "experiment:alice", Limit: sluice.PerMinute(1), Cost: 1, Shadow: true},
	}
	out := make([]sluice.Result, len(hits))
	for i := 1; i <= 3; i++ {
		if err := store.Take(context.Background(), hits, out); err != nil {
			panic(err)
		}
		fmt.Printf("request %d: per-user allowed=%-5v shadow allowed=%-5v admitted=%v\n",
			i, out[0].Allowed, out[1].Allowed, sluice.Admitted(hits, out))
	}
	// Output:
	// request 1: per-user allowed=true  shadow allowed=true  admitted=true
	// request 2: per-user allowed=true  shadow allowed=false admitted=true
	// request 3: per-user allowed=false shadow allowed=false admitted=false
}
