package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
)

// Limiter is the rate-limiting middleware. Create it with [New]; use
// [Limiter.Handler] as the middleware. It is safe for concurrent use.
type Limiter struct {
	store   sluice.Store
	rules   Source
	cfg     config
	local   *localFallback
	logs    sampler   // store failures
	denials sampler   // denials
	routing sampler   // keys run before routing
	audit   bypassLog // samples the log records of bypass uses
	pool    sync.Pool // *scratch
	// calls makes the store calls' contexts; nil for an in-process store, whose
	// calls get no deadline.
	calls *callContexts
	// inproc is the store when it can decide in process (see
	// sluice.LocalStore), tried before a call with a budget; else nil.
	inproc sluice.LocalStore
	// partial is the store when its hits can fail apart (see
	// sluice.PartialTaker), else nil.
	partial sluice.PartialTaker
}

// scratch is one request's working memory, pooled so that deciding does not
// allocate slices per request.
type scratch struct {
	m        rules.Matched
	results  []sluice.Result
	policies []headers.Policy
	exposed  []sluice.Result
	violated []string
	local    []bool // failed: the rules decided by the local fallback
	failed   []bool // the rules the store failed (all, on a whole failure)
	counts   []bool // refuse: the rules whose results count
}

// Source supplies the rules: a *rules.Set (fixed rules), or anything that
// swaps sets at run time. The limiter calls Current once per request, so
// every request is decided by one set, never a mix.
type Source interface {
	// Current returns the rules that decide the next request.
	Current() *rules.Set
}

// New returns a limiter deciding the rules of set on store. It returns an
// error wrapping [sluice.ErrInvalidConfig] for a nil store or set, or an
// invalid option.
func New(store sluice.Store, set Source, opts ...Option) (*Limiter, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: middleware: nil store", sluice.ErrInvalidConfig)
	}
	if set == nil || isNilSet(set) {
		return nil, fmt.Errorf("%w: middleware: nil rule set", sluice.ErrInvalidConfig)
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	if src, ok := store.(sluice.ObserverSource); ok && cfg.observer == nil {
		cfg.observer = src.Observer() // the store's events receiver: metrics in one place
	}
	l := &Limiter{store: store, rules: set, cfg: cfg, local: newLocalFallback(cfg.instances, store)}
	// An in-process store does no I/O: a deadline would bound nothing.
	if ip, ok := store.(sluice.InProcessStore); !ok || !ip.InProcess() {
		l.calls = newCallContexts(cfg.budget)
		l.inproc, _ = store.(sluice.LocalStore)
	}
	l.partial, _ = store.(sluice.PartialTaker)
	l.pool.New = func() any { return new(scratch) }
	return l, nil
}

// Limit returns the middleware of [New](store, set, opts...). It panics
// if New returns an error: for configurations fixed in code.
func Limit(store sluice.Store, set Source, opts ...Option) func(http.Handler) http.Handler {
	l, err := New(store, set, opts...)
	if err != nil {
		panic(err)
	}
	return l.Handler
}

// Handler returns next wrapped by the limiter. Its signature makes
// l.Handler a func(http.Handler) http.Handler, for chi's Use and With.
func (l *Limiter) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := l.pool.Get().(*scratch)
		if !l.decide(w, r, s) {
			l.pool.Put(s)
			return
		}
		if len(s.m.Hits) == 0 {
			l.pool.Put(s)
			next.ServeHTTP(w, r)
			return
		}
		// The request carries what later limiters and Charge need; the
		// scratch stays ours until the handler returns (or panics), when
		// charges made during it are settled.
		info := newRequestInfo(r, s.policies)
		r = info.attach(r)
		defer func() {
			l.settle(r, s, info)
			l.pool.Put(s)
		}()
		next.ServeHTTP(w, r)
	})
}

func isNilSet(src Source) bool {
	set, ok := src.(*rules.Set)
	return ok && set == nil
}

// decide decides r, sets the response headers, answers refused requests,
// and reports whether r may go on.
func (l *Limiter) decide(w http.ResponseWriter, r *http.Request, s *scratch) bool {
	if err := l.rules.Current().Resolve(r, &s.m); err != nil {
		if errors.Is(err, sluice.ErrInvalidHit) {
			l.cfg.onError(w, r, fmt.Errorf("%w: %w", ErrInvalidCost, err))
			return false
		}
		if errors.Is(err, keyfunc.ErrNotRouted) {
			l.routing.notRouted(r.Context(), l.cfg.logger, err)
		}
		l.cfg.onError(w, r, fmt.Errorf("%w: %w", ErrKeyFailed, err))
		return false
	}
	if s.m.Bypass != "" {
		l.audit.use(r.Context(), l.cfg.logger, s.m.Bypass)
	}
	s.policies = s.policies[:0]
	n := len(s.m.Hits)
	if n == 0 {
		return true
	}
	if cap(s.results) < n {
		s.results = make([]sluice.Result, n)
	}
	s.results = s.results[:n]

	latency, err := l.take(r.Context(), s.m.Hits, s.results)
	s.failed = append(s.failed[:0], make([]bool, n)...)
	if err != nil {
		var pe *sluice.PartialError
		if l.partial == nil || !errors.As(err, &pe) || !l.markFailed(s, pe) {
			for i := range s.failed {
				s.failed[i] = true
			}
		}
		return l.failed(w, r, s, err, latency)
	}

	admitted := sluice.Admitted(s.m.Hits, s.results)
	l.observe(r.Context(), s, latency, nil)
	l.writeHeaders(r, w.Header(), s, admitted)
	if admitted {
		return true
	}
	l.refuse(w, r, s, nil)
	return false
}

// take makes one store call under the latency budget (see callContexts)
// and reports it to an observer that wants store calls, with ctx, the
// request's context, not the call's.
func (l *Limiter) take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) (time.Duration, error) {
	if l.inproc != nil && l.inproc.TakeLocal(hits, out) {
		return 0, nil // decided in process: no store call to report
	}
	call, release := ctx, context.CancelFunc(nil)
	if l.calls != nil {
		call, release = l.calls.with(ctx)
	}
	start := time.Now()
	var err error
	if l.partial != nil {
		err = l.partial.TakePartial(call, hits, out)
	} else {
		err = l.store.Take(call, hits, out)
	}
	latency := time.Since(start)
	if release != nil {
		release()
	}
	if err == nil && out[0].Remembered {
		return 0, nil // refused from the store's memory: no store call to report
	}
	if o, ok := l.cfg.observer.(sluice.StoreCallObserver); ok {
		o.ObserveStoreCall(ctx, sluice.StoreCall{Latency: latency, Hits: len(hits), Err: err})
	}
	return latency, err
}

// markFailed marks in s.failed the rules of pe's failed hits and reports
// whether pe names only hits of the request.
func (l *Limiter) markFailed(s *scratch, pe *sluice.PartialError) bool {
	for _, i := range pe.Failed {
		if i < 0 || i >= len(s.failed) {
			return false
		}
		s.failed[i] = true
	}
	return true
}

// failed applies the on_fail policies of the rules the store failed
// (s.failed: all of them, or, on a [sluice.PartialError], some) and
// reports whether the request may go on: any closed failed rule refuses it
// (503); otherwise failed local rules decide in process (429 if one
// refuses) and failed open rules let it through. The other rules count by
// their results, and only they appear in headers. A request refused after a
// partial failure gives back what its decided hits took (see giveBack).
func (l *Limiter) failed(w http.ResponseWriter, r *http.Request, s *scratch, err error, latency time.Duration) bool {
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
	s.local = append(s.local[:0], make([]bool, len(s.m.Rules))...)
	localOK := true
	if anyLocal && !closed {
		ok, lerr := l.local.decide(s.m.Rules, s.m.Hits, s.results, s.failed, s.local)
		if lerr != nil { // cannot happen for validated rules; never block on it
			l.logs.failure(r.Context(), l.cfg.logger, lerr, false)
		} else {
			localOK = ok
		}
	}
	// The decided rules: a refused one refuses the request, and the store
	// has then given back the decided takes.
	decidedOK := true
	s.counts = append(s.counts[:0], s.local...)
	for i := range s.m.Rules {
		if !s.failed[i] {
			s.counts[i] = true
			h := &s.m.Hits[i]
			if !h.Shadow && !h.Force && !h.Peek && !s.results[i].Allowed {
				decidedOK = false
			}
		}
	}
	l.observe(r.Context(), s, latency, err)
	l.logs.failure(r.Context(), l.cfg.logger, err, closed)
	if partial && (closed || !localOK) && decidedOK {
		l.giveBack(r.Context(), s)
	}
	switch {
	case closed:
		// Retry-After: the breaker's remaining open time when it is
		// open, at least a second.
		retry := time.Second
		var se *sluice.StoreError
		if errors.As(err, &se) {
			retry = max(retry, se.RetryAfter)
		}
		h := w.Header()
		headers.SetRetryAfter(h, retry)
		h.Set("Cache-Control", "no-store")
		l.cfg.onError(w, r, fmt.Errorf("%w: %w", ErrStoreFailed, err))
		return false
	case !decidedOK:
		l.writeHeaders(r, w.Header(), s, false)
		l.refuse(w, r, s, s.counts)
		return false
	case !localOK:
		l.refuse(w, r, s, s.local) // no rate-limit headers: on_fail rules never appear in them
		return false
	}
	if partial {
		l.writeHeaders(r, w.Header(), s, true)
	}
	return true
}

// giveBack refunds what the decided hits of a request took when a failed
// rule's policy refuses it after a partial failure, so that a refused
// request consumes nothing. A refund is never retried (a retry can give
// back twice); one that fails is reported to the observer as a failed
// store call and logged, and loses at most the request's cost until the
// buckets refill.
func (l *Limiter) giveBack(ctx context.Context, s *scratch) {
	var refunds []sluice.Refund
	for i := range s.m.Hits {
		h := &s.m.Hits[i]
		if rc := s.results[i].Receipt; !s.failed[i] && rc.Taken > 0 && !h.Force && !h.Peek {
			refunds = append(refunds, sluice.Refund{Hit: *h, Receipt: rc})
		}
	}
	if len(refunds) == 0 {
		return
	}
	call, release := ctx, context.CancelFunc(nil)
	if l.calls != nil {
		call, release = l.calls.with(ctx)
	}
	start := time.Now()
	err := l.partial.Refund(call, refunds)
	latency := time.Since(start)
	if release != nil {
		release()
	}
	if o, ok := l.cfg.observer.(sluice.StoreCallObserver); ok {
		o.ObserveStoreCall(ctx, sluice.StoreCall{Latency: latency, Hits: len(refunds), Err: err})
	}
	if err != nil {
		l.logs.failure(ctx, l.cfg.logger, fmt.Errorf("middleware: refund of a refused request's decided rules: %w", err), true)
	}
}

// refuse answers 429 for a refused request: Retry-After (the longest wait
// among the enforcing rules that refused it, none when one never can pass),
// Cache-Control, the Denial naming the exposed rules that refused it, its
// log line, then the deny handler. decided says which rules' results count
// (nil: all, as the store decided them; else those the local fallback
// decided).
func (l *Limiter) refuse(w http.ResponseWriter, r *http.Request, s *scratch, decided []bool) {
	var retry time.Duration
	unsatisfiable := false
	s.violated = s.violated[:0]
	for i, rule := range s.m.Rules {
		res := &s.results[i]
		if (decided != nil && !decided[i]) || rule.Shadow || res.Allowed {
			continue
		}
		if res.Unsatisfiable {
			unsatisfiable = true
		}
		retry = max(retry, res.RetryAfter)
		if rule.Exposed() {
			s.violated = append(s.violated, headers.SanitizeName(rule.Name))
		}
	}
	// A copy: the deny handler or a log handler may keep it, and the
	// scratch it was built in serves the next request.
	d := Denial{Policies: slices.Clone(s.violated), Unsatisfiable: unsatisfiable}
	h := w.Header()
	if !unsatisfiable {
		d.RetryAfter = retry
		headers.SetRetryAfter(h, retry)
	}
	h.Set("Cache-Control", "no-store")
	l.denials.denial(r.Context(), l.cfg.logger, d)
	l.cfg.deny(w, r, d)
}

// observe reports how each rule took part in a request: decided by the
// store (err nil, or a rule not in s.failed), or, for the rules the store
// failed with err, by their on_fail policies and the local fallback
// (s.local).
func (l *Limiter) observe(ctx context.Context, s *scratch, latency time.Duration, err error) {
	if l.cfg.observer == nil {
		return
	}
	for i, rule := range s.m.Rules {
		failed := err != nil && s.failed[i]
		d := sluice.Decision{Rule: rule.Name, Shadow: rule.Shadow, Latency: latency}
		if failed {
			d.Err = err
		}
		switch {
		case failed && s.local[i]:
			d.Outcome, d.Result = sluice.OutcomeLocal, s.results[i]
		case failed && rule.OnFail == rules.FailClosed && !rule.Shadow:
			d.Outcome = sluice.OutcomeFailedClosed
		case failed:
			d.Outcome = sluice.OutcomeFailedOpen
		case s.results[i].Remembered && s.results[i].Allowed:
			continue // not decided: the store refused the request from memory
		case s.results[i].Allowed:
			d.Outcome, d.Result = sluice.OutcomeAllowed, s.results[i]
		case rule.Shadow:
			d.Outcome, d.Result = sluice.OutcomeShadowDenied, s.results[i]
		default:
			d.Outcome, d.Result = sluice.OutcomeDenied, s.results[i]
		}
		d.Outcome = bypassOutcome(&s.m, d.Outcome)
		l.cfg.observer.Observe(ctx, d)
	}
}

// writeHeaders describes the exposed rules the store decided (not those in
// s.failed): all in RateLimit-Policy, the
// binding one in RateLimit. Policies an outer limiter already admitted the
// request under (see withPrior) are described too, so chaining limiters, a
// global one and one on a route, never hides a rule from the client.
func (l *Limiter) writeHeaders(r *http.Request, h http.Header, s *scratch, admitted bool) {
	s.policies = append(s.policies[:0], prior(r)...)
	s.exposed = s.exposed[:0]
	for _, p := range s.policies {
		s.exposed = append(s.exposed, p.Result)
	}
	for i, rule := range s.m.Rules {
		if rule.Exposed() && !s.failed[i] {
			s.policies = append(s.policies, headers.Policy{Name: rule.Name, Result: s.results[i]})
			s.exposed = append(s.exposed, s.results[i])
		}
	}
	if l.cfg.headers == headers.None {
		return
	}
	if bind := rules.BindingResult(s.exposed, admitted); bind >= 0 {
		headers.Write(h, l.cfg.headers, s.policies, bind, l.cfg.now())
	}
}
