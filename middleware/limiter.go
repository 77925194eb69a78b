package middleware

import (
	"net/http"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/rules"
)

// Limiter is the rate-limiting middleware. Create it with [New]; use
// [Limiter.Handler] as the middleware. It is safe for concurrent use.
type Limiter struct {
	rules   rules.Source
	cfg     config
	decider *decide.Decider
}

// New returns a limiter deciding the rules of set on store. It returns an
// error wrapping [sluice.ErrInvalidConfig] for a nil store or set, or an
// invalid option.
func New(store sluice.Store, set rules.Source, opts ...Option) (*Limiter, error) {
	if set == nil || isNilSet(set) {
		return nil, &decide.ConfigError{Package: "middleware", Msg: "New: nil rule set"}
	}
	l := &Limiter{rules: set, cfg: config{deny: WriteDenial, onError: WriteError}}
	var err error
	if l.decider, err = decide.NewFrontEnd("middleware", store, &l.cfg, opts); err != nil {
		return nil, err
	}
	if l.cfg.named {
		return nil, errNamedRuleSet(l.cfg.oneLiner)
	}
	return l, nil
}

// Limit returns the middleware of [New](store, set, opts...). It panics
// if New returns an error: for configurations fixed in code.
func Limit(store sluice.Store, set rules.Source, opts ...Option) func(http.Handler) http.Handler {
	l, err := New(store, set, opts...)
	if err != nil {
		panic(err)
	}
	return l.Handler
}

// Handler returns next wrapped by the limiter. Its signature makes
// l.Handler a func(http.Handler) http.Handler, for chi's Use and With.
func (l *Limiter) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { l.serve(next, w, r) })
}

func isNilSet(src rules.Source) bool {
	set, ok := src.(*rules.Set)
	return ok && set == nil
}

// serve checks r, answers it if it may not go on, and otherwise calls
// next, with what later limiters and Charge need in r's context, and
// finishes the outcome when next returns (or panics).
func (l *Limiter) serve(next http.Handler, w http.ResponseWriter, r *http.Request) {
	o := l.decider.Check(l.rules.Current(), r, prior(r))
	if !l.answer(w, r, o) {
		o.Finish(r.Context(), 0)
		return
	}
	if len(o.Hits) == 0 {
		o.Finish(r.Context(), 0)
		next.ServeHTTP(w, r)
		return
	}
	info := newRequestInfo(r, o.Policies)
	r = info.attach(r)
	if o.Counting() {
		serveCounted(next, w, r, o, info)
		return
	}
	defer func() { o.Finish(r.Context(), info.charged.Load()) }()
	next.ServeHTTP(w, r)
}

// answer sets o's fields in the response headers and answers a request
// that may not go on: 429 for a refusal (the deny handler), 503 for a
// closed rule's store failure and 400 or 500 for one that could not be
// decided (the error handler). It reports whether r may go on.
func (l *Limiter) answer(w http.ResponseWriter, r *http.Request, o *decide.Outcome) bool {
	if len(o.Fields) > 0 {
		headers.SetFields(w.Header(), o.Fields)
	}
	switch o.Verdict {
	case decide.Invalid:
		l.cfg.onError(w, r, o.Err)
	case decide.Unavailable:
		w.Header().Set("Cache-Control", "no-store")
		l.cfg.onError(w, r, o.Err)
	case decide.Refused:
		w.Header().Set("Cache-Control", "no-store")
		l.cfg.deny(w, r, denial(o))
	default:
		return true
	}
	return false
}

// denial describes a refused request: the exposed rules that refused it,
// and the Retry-After sent, none when one never can pass.
func denial(o *decide.Outcome) Denial {
	// A fresh slice: the deny handler or a log handler may keep it.
	var policies []string
	for rule := range o.Violated() {
		policies = append(policies, headers.SanitizeName(rule.Name))
	}
	return Denial{Policies: policies, RetryAfter: o.RetryAfter, Unsatisfiable: o.Unsatisfiable}
}
