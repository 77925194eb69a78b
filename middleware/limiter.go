package middleware

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
)

// Limiter is the rate-limiting middleware. Create it with [New]; use
// [Limiter.Handler] as the middleware. It is safe for concurrent use.
type Limiter struct {
	rules   Source
	cfg     config
	decider *decide.Decider
	routing decide.Sampler // keys run before routing
	charges decide.Sampler // after-the-fact charges lost
	pool    sync.Pool      // *scratch
}

// scratch is one request's working memory, pooled so that deciding does not
// allocate slices per request.
type scratch struct {
	m        rules.Matched
	d        decide.Decision
	policies []headers.Policy
	exposed  []sluice.Result
	violated []string
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
	d, err := decide.New(store, append(cfg.decide, decide.WithLogger(cfg.logger))...)
	if err != nil {
		return nil, err
	}
	l := &Limiter{rules: set, cfg: cfg, decider: d}
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
			logNotRouted(r.Context(), &l.routing, l.cfg.logger, err)
		}
		l.cfg.onError(w, r, fmt.Errorf("%w: %w", ErrKeyFailed, err))
		return false
	}
	s.policies = s.policies[:0]
	l.decider.Decide(r.Context(), &s.m, &s.d)
	if len(s.m.Hits) == 0 {
		return true
	}
	d := &s.d
	if d.Headers() {
		l.writeHeaders(r, w.Header(), s, d.Verdict == decide.Admitted)
	}
	switch d.Verdict {
	case decide.Unavailable:
		h := w.Header()
		headers.SetRetryAfter(h, d.RetryAfter())
		h.Set("Cache-Control", "no-store")
		l.cfg.onError(w, r, fmt.Errorf("%w: %w", ErrStoreFailed, d.Err))
		return false
	case decide.Refused:
		l.refuse(w, r, s)
		return false
	}
	return true
}

// refuse answers 429 for a refused request: Retry-After (the longest wait
// among the enforcing rules that refused it, none when one never can pass),
// Cache-Control, the Denial naming the exposed rules that refused it, then
// the deny handler.
func (l *Limiter) refuse(w http.ResponseWriter, r *http.Request, s *scratch) {
	s.violated = s.violated[:0]
	for i, rule := range s.m.Rules {
		if s.d.Refusing(i) && rule.Exposed() {
			s.violated = append(s.violated, headers.SanitizeName(rule.Name))
		}
	}
	// A copy: the deny handler or a log handler may keep it, and the
	// scratch it was built in serves the next request.
	d := Denial{Policies: slices.Clone(s.violated), Unsatisfiable: s.d.Unsatisfiable()}
	h := w.Header()
	if !d.Unsatisfiable {
		d.RetryAfter = s.d.RetryAfter()
		headers.SetRetryAfter(h, d.RetryAfter)
	}
	h.Set("Cache-Control", "no-store")
	l.cfg.deny(w, r, d)
}

// writeHeaders describes the exposed rules the store decided: all in
// RateLimit-Policy, the binding one in RateLimit. Policies an outer
// limiter already admitted the request under (see withPrior) are
// described too, so chaining limiters, a global one and one on a route,
// never hides a rule from the client.
func (l *Limiter) writeHeaders(r *http.Request, h http.Header, s *scratch, admitted bool) {
	s.policies = s.d.AppendPolicies(append(s.policies[:0], prior(r)...))
	if l.cfg.headers == headers.None {
		return
	}
	s.exposed = s.exposed[:0]
	for _, p := range s.policies {
		s.exposed = append(s.exposed, p.Result)
	}
	if bind := rules.BindingResult(s.exposed, admitted); bind >= 0 {
		headers.Write(h, l.cfg.headers, s.policies, bind, l.cfg.now())
	}
}
