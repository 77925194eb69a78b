package decide_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// A front end lets the decider check a request by its rules, turns the
// outcome into its own answer (here, a line of text), and finishes the
// outcome when the request is over.
func Example() {
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock})
	defer store.Close(context.Background())
	set := rules.MustNew(
		rules.Rule{Name: "per-key", Key: keyfunc.Header("X-API-Key"), Limit: sluice.PerMinute(2)},
		rules.Rule{Name: "trial", Key: keyfunc.Global(), Limit: sluice.PerMinute(1), Shadow: true},
	)
	d, err := decide.New(store, decide.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	for range 3 {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-API-Key", "k1")
		dec := d.Check(set, r, nil)
		switch dec.Verdict {
		case decide.Admitted:
			fmt.Printf("admitted, %d left\n", dec.Results[0].Remaining)
		case decide.Refused:
			fmt.Printf("refused, retry after %v\n", dec.RetryAfter)
		case decide.Unavailable, decide.Invalid:
			fmt.Printf("%v: %v\n", dec.Verdict, dec.Err)
		}
		dec.Finish(r.Context(), 0)
	}
	// Output:
	// admitted, 1 left
	// admitted, 0 left
	// refused, retry after 30s
}

// The binding policy is the one the RateLimit field describes: for an
// admitted request the rule closest to its limit, for a refused one the rule
// that refused it for longest, whose RetryAfter is the wait for them all.
func ExampleOutcome_binding() {
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock})
	defer store.Close(context.Background())

	set := rules.MustNew(
		rules.Rule{Name: "per-second", Key: keyfunc.ClientIP(), Limit: sluice.PerSecond(5)},
		rules.Rule{Name: "per-minute", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(8)},
	)
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.1:1234"

	d, err := decide.New(store, decide.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	for i := 1; i <= 10; i++ {
		o := d.Check(set, r, nil)
		admitted := o.Verdict == decide.Admitted
		b := o.Policies[o.Binding] // both rules are exposed
		fmt.Printf("request %2d: admitted=%-5v binding=%s remaining=%d", i, admitted, b.Name, b.Result.Remaining)
		if !admitted {
			fmt.Printf(" retry after %v", b.Result.RetryAfter)
		}
		fmt.Println()
		o.Finish(r.Context(), 0)
		clock.Advance(100 * time.Millisecond)
	}
	// Output:
	// request  1: admitted=true  binding=per-second remaining=4
	// request  2: admitted=true  binding=per-second remaining=3
	// request  3: admitted=true  binding=per-second remaining=3
	// request  4: admitted=true  binding=per-second remaining=2
	// request  5: admitted=true  binding=per-second remaining=2
	// request  6: admitted=true  binding=per-second remaining=1
	// request  7: admitted=true  binding=per-minute remaining=1
	// request  8: admitted=true  binding=per-minute remaining=0
	// request  9: admitted=false binding=per-minute remaining=0 retry after 6.7s
	// request 10: admitted=false binding=per-minute remaining=0 retry after 6.6s
}
