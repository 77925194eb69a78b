package rules_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// A concurrency limit: at most two requests of a client in flight. A
// request takes a slot, and frees it by refunding its receipt when it is
// over (the middleware does both); a third in flight is refused with a
// wait of at most a second. The clock is a test clock; in production leave
// Clock out.
func ExampleConcurrency() {
	clock := storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	store := memstore.New(memstore.Config{Clock: clock})
	defer store.Close(context.Background())
	set := rules.MustNew(rules.Rule{
		Name: "reports-in-flight", Key: keyfunc.ClientIP(),
		Concurrency: &rules.Concurrency{Max: 2, Hold: time.Minute},
	})
	start := func() sluice.Refund {
		var m rules.Matched
		if err := set.Resolve(httptest.NewRequest("GET", "/", nil), &m); err != nil {
			panic(err)
		}
		out := make([]sluice.Result, len(m.Hits))
		if err := store.Take(context.Background(), m.Hits, out); err != nil {
			panic(err)
		}
		fmt.Printf("allowed=%-5v free=%d retry-after=%v\n", out[0].Allowed, out[0].Remaining, out[0].RetryAfter)
		return sluice.Refund{Hit: m.Hits[0], Receipt: out[0].Receipt}
	}
	first := start()
	start()
	start()
	if err := store.Refund(context.Background(), []sluice.Refund{first}); err != nil { // the first request is over
		panic(err)
	}
	start()
	// Output:
	// allowed=true  free=1 retry-after=0s
	// allowed=true  free=0 retry-after=0s
	// allowed=false free=0 retry-after=1s
	// allowed=true  free=0 retry-after=0s
}
