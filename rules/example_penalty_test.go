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

// A penalty: the client the rule refuses is blocked for 15 minutes,
// whatever its bucket holds, with the time left as its wait. The clock is
// a test clock; in production leave Clock out.
func ExamplePenalty() {
	clock := storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	store := memstore.New(memstore.Config{Clock: clock})
	defer store.Close(context.Background())
	set := rules.MustNew(rules.Rule{
		Name: "abusive-clients", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(2),
		Penalty: &rules.Penalty{Block: 15 * time.Minute},
	})
	request := func() {
		var m rules.Matched
		if err := set.Resolve(httptest.NewRequest("GET", "/", nil), &m); err != nil {
			panic(err)
		}
		out := make([]sluice.Result, len(m.Hits))
		if err := store.Take(context.Background(), m.Hits, out); err != nil {
			panic(err)
		}
		fmt.Printf("allowed=%-5v blocked=%-5v retry-after=%v\n", out[0].Allowed, out[0].Blocked, out[0].RetryAfter)
	}
	for range 3 {
		request()
	}
	clock.Advance(5 * time.Minute) // the bucket is full again; the block runs on
	request()
	clock.Advance(10 * time.Minute)
	request()
	// Output:
	// allowed=true  blocked=false retry-after=0s
	// allowed=true  blocked=false retry-after=0s
	// allowed=false blocked=true  retry-after=15m0s
	// allowed=false blocked=true  retry-after=10m0s
	// allowed=true  blocked=false retry-after=0s
}
