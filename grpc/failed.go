package sluicegrpc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/rules"
)

// failed applies the on_fail policies of the rules the store failed
// (s.failed: all of them, or, on a [sluice.PartialError], some) and
// returns the call's error, nil to let it go on: any closed failed rule
// ends it with the error handler's status (Unavailable by default);
// otherwise failed local rules decide in process (a refusal if one
// refuses) and failed open rules let it through. The other rules count by
// their results, and only they appear in the rate-limit fields. A call
// refused after a partial failure gives back what its decided hits took.
func (l *Limiter) failed(r *http.Request, h http.Header, s *scratch, err error, latency time.Duration) error {
	ctx := r.Context()
	closed, anyLocal, partial := false, false, false
	for i, rule := range s.m.Rules {
		switch {
		case !s.failed[i]:
			partial = true
		case rule.Shadow:
		case rule.OnFail == rules.FailClosed:
			closed = true
		case rule.OnFail == rules.FailLocal:
			anyLocal = true
		}
	}
	localOK := true
	if anyLocal && !closed {
		ok, lerr := l.local.decide(s.m.Rules, s.m.Hits, s.results, s.failed, s.local)
		if lerr != nil { // cannot happen for validated rules; never refuse on it
			l.logs.failure(ctx, l.cfg.logger, lerr, false)
		} else {
			localOK = ok
		}
	}
	decidedOK := true
	s.counts = append(s.counts[:0], s.local...)
	for i := range s.m.Rules {
		if !s.failed[i] {
			s.counts[i] = true
			hit := &s.m.Hits[i]
			if !hit.Shadow && !hit.Force && !hit.Peek && !s.results[i].Allowed {
				decidedOK = false
			}
		}
	}
	l.observe(ctx, s, latency, err)
	l.logs.failure(ctx, l.cfg.logger, err, closed)
	if partial && (closed || !localOK) && decidedOK {
		l.giveBack(ctx, s)
	}
	switch {
	case closed:
		// The breaker's remaining open time when it is open, at least a
		// second.
		retry := time.Second
		var se *sluice.StoreError
		if errors.As(err, &se) {
			retry = max(retry, se.RetryAfter)
		}
		headers.SetRetryAfter(h, retry)
		return l.cfg.onError(ctx, fmt.Errorf("%w: %w", ErrStoreFailed, err), retry)
	case !decidedOK:
		l.writeHeaders(h, s, false)
		return l.refuse(r, h, s, s.counts)
	case !localOK:
		return l.refuse(r, h, s, s.local) // no rate-limit fields: on_fail rules never appear in them
	}
	if partial {
		l.writeHeaders(h, s, true)
	}
	return nil
}

// giveBack refunds what the decided hits of a call took when a failed
// rule's policy refuses it after a partial failure, so that a refused call
// consumes nothing. A refund is never retried; one that fails is reported
// to the observer as a failed store call and logged.
func (l *Limiter) giveBack(ctx context.Context, s *scratch) {
	var refunds []sluice.Refund
	for i := range s.m.Hits {
		hit := &s.m.Hits[i]
		if rc := s.results[i].Receipt; !s.failed[i] && rc.Taken > 0 && !hit.Force && !hit.Peek {
			refunds = append(refunds, sluice.Refund{Hit: *hit, Receipt: rc})
		}
	}
	if len(refunds) == 0 {
		return
	}
	call, release := l.callContext(ctx)
	start := time.Now()
	err := l.partial.Refund(call, refunds)
	latency := time.Since(start)
	release()
	if o, ok := l.cfg.observer.(sluice.StoreCallObserver); ok {
		o.ObserveStoreCall(ctx, sluice.StoreCall{Latency: latency, Hits: len(refunds), Err: err})
	}
	if err != nil {
		l.logs.failure(ctx, l.cfg.logger, fmt.Errorf("sluicegrpc: refund of a refused call's decided rules: %w", err), true)
	}
}

// refuse returns the refusal of a call: the deny handler's error for the
// [Denial] of the enforcing rules that refused it, with retry-after in h
// (the longest wait among them, none when one never can pass) and the
// pushback trailer. decided says which rules' results count (nil: all, as
// the store decided them; else those the local fallback decided).
func (l *Limiter) refuse(r *http.Request, h http.Header, s *scratch, decided []bool) error {
	d := Denial{FullMethod: r.URL.Path}
	for i, rule := range s.m.Rules {
		res := &s.results[i]
		if (decided != nil && !decided[i]) || rule.Shadow || res.Allowed {
			continue
		}
		if res.Unsatisfiable {
			d.Unsatisfiable = true
		}
		d.RetryAfter = max(d.RetryAfter, res.RetryAfter)
		if rule.Exposed() {
			d.Violations = append(d.Violations, Violation{
				Rule: headers.SanitizeName(rule.Name), Kind: rule.Key.Kind(), Limit: rule.Limit,
			})
		}
	}
	if d.Unsatisfiable {
		d.RetryAfter = 0
	} else {
		headers.SetRetryAfter(h, d.RetryAfter)
		if l.cfg.pushback {
			h.Set(pushbackKey, strconv.FormatInt(ceilMillis(d.RetryAfter), 10))
		}
	}
	l.denials.denial(r.Context(), l.cfg.logger, d)
	return l.cfg.deny(r.Context(), d)
}

// ceilMillis returns d in whole milliseconds rounded up, at least 1.
func ceilMillis(d time.Duration) int64 {
	ms := int64((d + time.Millisecond - 1) / time.Millisecond)
	return max(ms, 1)
}
