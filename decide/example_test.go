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

// A protocol layer resolves a request's rules, lets the decider decide
// them, and turns the decision into its own answer: here, a line of text.
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
	var m rules.Matched
	var dec decide.Decision // reused, as m is
	for range 3 {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-API-Key", "k1")
		if err := set.Resolve(r, &m); err != nil {
			panic(err)
		}
		d.Decide(r.Context(), &m, &dec)
		switch dec.Verdict {
		case decide.Admitted:
			fmt.Printf("admitted, %d left\n", dec.Results[0].Remaining)
		case decide.Refused:
			fmt.Printf("refused, retry after %v\n", dec.RetryAfter())
		case decide.Unavailable:
			fmt.Printf("unavailable: %v\n", dec.Err)
		}
	}
	// Output:
	// admitted, 1 left
	// admitted, 0 left
	// refused, retry after 30s
}
