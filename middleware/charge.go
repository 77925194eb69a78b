package middleware

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/sluicehq/sluice"
)

// ErrNotLimited is returned by [Charge] for a request no limiter admitted.
var ErrNotLimited = errors.New("middleware: request did not pass a limiter")

// Charge adds n to the cost of r after the fact: for what is known only
// once the handler has run, such as the size of the response. When the
// handler returns, even by panicking, every limiter r passed charges n more
// to each of its enforcing rules, whether or not they have n left: the
// buckets may go into debt (bounded: at most twice a rule's capacity is
// ever owed), delaying the client's next requests.
//
// Charging is best effort. It runs after the response, under the latency
// budget as any store call does (see [decide.WithBudget]); a failure is logged,
// never shown to the client. Call Charge from the handler with the request
// it received (or one derived from it). Negative n is refused; 0 does
// nothing.
func Charge(r *http.Request, n int64) error {
	if n < 0 {
		return fmt.Errorf("middleware: %w: negative charge %d", sluice.ErrInvalidHit, n)
	}
	info := infoFrom(r)
	if info == nil {
		return ErrNotLimited
	}
	for ; info != nil; info = info.outer {
		info.charged.Add(n)
	}
	return nil
}
