package middleware

import (
	"context"
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
// budget as any store call does (see [WithBudget]); a failure is logged,
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

// settle charges what [Charge] added to the request's enforcing hits, in
// one forced store call. It runs after the handler, so it uses a context
// that outlives the request (the client may be gone) but keeps the budget.
func (l *Limiter) settle(r *http.Request, s *scratch, info *requestInfo) {
	n := info.charged.Load()
	if n == 0 {
		return
	}
	hits := s.m.Hits[:0:0] // a fresh slice: s.m.Hits still describes the request
	for _, h := range s.m.Hits {
		if !h.Shadow {
			h.Cost, h.Force, h.Peek, h.MinCost = n, true, false, 0
			hits = append(hits, h)
		}
	}
	if len(hits) == 0 {
		return
	}
	ctx := context.WithoutCancel(r.Context())
	if _, err := l.decider.Take(ctx, hits, make([]sluice.Result, len(hits))); err != nil {
		logChargeLost(ctx, &l.charges, l.cfg.logger, n, err)
	}
}
