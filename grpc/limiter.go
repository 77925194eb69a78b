package sluicegrpc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/rules"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// Limiter rate-limits gRPC calls by the rules of a [rules.Set] (or any
// [Source]) on a [sluice.Store], as the HTTP middleware limits requests:
// the same rules, keys, buckets, on_fail policies and observer. Create it
// with [New]; install [Limiter.UnaryServerInterceptor] and
// [Limiter.StreamServerInterceptor] on the server. It is safe for
// concurrent use.
type Limiter struct {
	store   sluice.Store
	rules   Source
	cfg     config
	local   *localFallback
	logs    sampler   // store failures
	denials sampler   // refusals
	audit   bypassLog // bypass uses
	pool    sync.Pool // *scratch
	// budgeted: the store does I/O, so its calls get the latency budget.
	budgeted bool
	// inproc is the store when it can decide in process (see
	// sluice.LocalStore), tried before a call with a budget; else nil.
	inproc sluice.LocalStore
	// partial is the store when its hits can fail apart (see
	// sluice.PartialTaker), else nil.
	partial sluice.PartialTaker
}

// Source supplies the rules: a *rules.Set (fixed rules), or anything that
// swaps sets at run time, such as a rulefile.Watcher. The limiter calls
// Current once per call, so every call is decided by one set. The HTTP
// middleware's Source is the same interface: one source can feed both.
type Source interface {
	// Current returns the rules that decide the next call.
	Current() *rules.Set
}

// scratch is one call's working memory, pooled so that deciding does not
// allocate slices per call.
type scratch struct {
	m        rules.Matched
	results  []sluice.Result
	policies []headers.Policy
	exposed  []sluice.Result
	local    []bool // failed: the rules decided by the local fallback
	failed   []bool // the rules the store failed (all, on a whole failure)
	counts   []bool // refuse: the rules whose results count
}

// New returns a limiter deciding the rules of set on store. A nil store or
// set, or an invalid option, is an error wrapping
// [sluice.ErrInvalidConfig].
func New(store sluice.Store, set Source, opts ...Option) (*Limiter, error) {
	if store == nil {
		return nil, invalidConfig("New: nil store")
	}
	if set == nil {
		return nil, invalidConfig("New: nil rule set")
	}
	if s, ok := set.(*rules.Set); ok && s == nil {
		return nil, invalidConfig("New: nil rule set")
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	if src, ok := store.(sluice.ObserverSource); ok && cfg.observer == nil {
		cfg.observer = src.Observer()
	}
	l := &Limiter{store: store, rules: set, cfg: cfg, local: newLocalFallback(cfg.instances, store)}
	if ip, ok := store.(sluice.InProcessStore); !ok || !ip.InProcess() {
		l.budgeted = true
		l.inproc, _ = store.(sluice.LocalStore)
	}
	l.partial, _ = store.(sluice.PartialTaker)
	l.pool.New = func() any { return new(scratch) }
	return l, nil
}

// UnaryServerInterceptor returns the interceptor that decides each unary
// call before its handler runs: an admitted call goes on with the
// rate-limit fields in its response header metadata; a refused one ends
// with the [DenyHandler]'s error, by default [DenialStatus]'s
// ResourceExhausted; one the limiter could not decide with the
// [ErrorHandler]'s, by default [ErrorStatus]'s.
func (l *Limiter) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		header, trailer, err := l.Decide(ctx, info.FullMethod)
		if header != nil {
			_ = grpc.SetHeader(ctx, header) // fails only once headers are sent: never here
		}
		if trailer != nil {
			_ = grpc.SetTrailer(ctx, trailer)
		}
		if err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// StreamServerInterceptor returns the interceptor that decides each
// streaming call before its handler runs, once per call (not per
// message), as [Limiter.UnaryServerInterceptor] decides unary calls.
func (l *Limiter) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		header, trailer, err := l.Decide(ss.Context(), info.FullMethod)
		if header != nil {
			_ = ss.SetHeader(header)
		}
		if trailer != nil {
			ss.SetTrailer(trailer)
		}
		if err != nil {
			return err
		}
		return handler(srv, ss)
	}
}

// Decide decides the call of fullMethod whose server context is ctx, as
// the interceptors do, for servers that limit elsewhere (in a handler, a
// stats handler): header is the response header metadata to send (the
// rate-limit fields, and retry-after with a refusal), trailer the
// trailer metadata (grpc-retry-pushback-ms with a refusal), each nil when
// empty; err, when not nil, is the status error to end the call with.
func (l *Limiter) Decide(ctx context.Context, fullMethod string) (header, trailer metadata.MD, err error) {
	s := l.pool.Get().(*scratch)
	defer l.pool.Put(s)
	r := newRequest(ctx, fullMethod, l.pattern(fullMethod))
	h := http.Header{}
	err = l.decide(r, h, s)
	header, trailer = toMetadata(h)
	return header, trailer, err
}

// decide decides r, sets the rate-limit fields in h, and returns the
// call's error, or nil for an admitted call.
func (l *Limiter) decide(r *http.Request, h http.Header, s *scratch) error {
	ctx := r.Context()
	if err := l.rules.Current().Resolve(r, &s.m); err != nil {
		if errors.Is(err, sluice.ErrInvalidHit) {
			return l.cfg.onError(ctx, fmt.Errorf("%w: %w", ErrInvalidCost, err), 0)
		}
		return l.cfg.onError(ctx, fmt.Errorf("%w: %w", ErrKeyFailed, err), 0)
	}
	if s.m.Bypass != "" {
		l.audit.use(ctx, l.cfg.logger, s.m.Bypass)
	}
	n := len(s.m.Hits)
	if n == 0 {
		return nil
	}
	if cap(s.results) < n {
		s.results = make([]sluice.Result, n)
	}
	s.results = s.results[:n]
	clear(s.results)

	latency, err := l.take(ctx, s.m.Hits, s.results)
	s.failed, s.local = falses(s.failed, n), falses(s.local, n)
	if err != nil {
		var pe *sluice.PartialError
		if l.partial == nil || !errors.As(err, &pe) || !markFailed(s, pe) {
			for i := range s.failed {
				s.failed[i] = true
			}
		}
		return l.failed(r, h, s, err, latency)
	}
	admitted := sluice.Admitted(s.m.Hits, s.results)
	l.observe(ctx, s, latency, nil)
	l.writeHeaders(h, s, admitted)
	if admitted {
		return nil
	}
	return l.refuse(r, h, s, nil)
}

// take makes one store call under the latency budget and reports it to an
// observer that wants store calls.
func (l *Limiter) take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) (time.Duration, error) {
	if l.inproc != nil && l.inproc.TakeLocal(hits, out) {
		return 0, nil // decided in process: no store call to report
	}
	call, release := l.callContext(ctx)
	start := time.Now()
	var err error
	if l.partial != nil {
		err = l.partial.TakePartial(call, hits, out)
	} else {
		err = l.store.Take(call, hits, out)
	}
	latency := time.Since(start)
	release()
	if err == nil && out[0].Remembered {
		return 0, nil // refused from the store's memory: no store call to report
	}
	if o, ok := l.cfg.observer.(sluice.StoreCallObserver); ok {
		o.ObserveStoreCall(ctx, sluice.StoreCall{Latency: latency, Hits: len(hits), Err: err})
	}
	return latency, err
}

// callContext returns the context of a store call made now for a call
// whose context is ctx: its values, without its cancellation (a client
// gone mid-call does not cut the store call short, which would make it
// ambiguous), and the budget's deadline or ctx's, whichever is earlier. A
// ctx already done is passed as it is: the store refuses it at once.
func (l *Limiter) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if !l.budgeted || ctx.Err() != nil {
		return ctx, func() {}
	}
	deadline := time.Now().Add(l.cfg.budget)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return context.WithDeadline(context.WithoutCancel(ctx), deadline)
}

// falses returns b resized to n, every element false.
func falses(b []bool, n int) []bool {
	if cap(b) < n {
		return make([]bool, n)
	}
	b = b[:n]
	clear(b)
	return b
}

// markFailed marks in s.failed the rules of pe's failed hits and reports
// whether pe names only hits of the call.
func markFailed(s *scratch, pe *sluice.PartialError) bool {
	for _, i := range pe.Failed {
		if i < 0 || i >= len(s.failed) {
			return false
		}
		s.failed[i] = true
	}
	return true
}

// writeHeaders describes in h the exposed rules the store decided (not
// those in s.failed): all in RateLimit-Policy, the binding one in
// RateLimit.
func (l *Limiter) writeHeaders(h http.Header, s *scratch, admitted bool) {
	if l.cfg.headers == headers.None {
		return
	}
	s.policies, s.exposed = s.policies[:0], s.exposed[:0]
	for i, rule := range s.m.Rules {
		if rule.Exposed() && !s.failed[i] {
			s.policies = append(s.policies, headers.Policy{Name: rule.Name, Result: s.results[i]})
			s.exposed = append(s.exposed, s.results[i])
		}
	}
	if bind := rules.BindingResult(s.exposed, admitted); bind >= 0 {
		headers.Write(h, l.cfg.headers, s.policies, bind, l.cfg.now())
	}
}

// pushbackKey is the trailer gRPC's own retries read their delay from.
const pushbackKey = "grpc-retry-pushback-ms"

// toMetadata returns the fields of h as header metadata, names in lower
// case, and the pushback field as trailer metadata; nil for none.
func toMetadata(h http.Header) (header, trailer metadata.MD) {
	for k, vs := range h {
		k = strings.ToLower(k)
		if k == pushbackKey {
			trailer = metadata.MD{k: vs}
			continue
		}
		if header == nil {
			header = make(metadata.MD, len(h))
		}
		header[k] = vs
	}
	return header, trailer
}

// bypassOutcome is the outcome the observer receives for a rule of m:
// OutcomeBypassed for a bypass entry's limit that let the call through.
func bypassOutcome(m *rules.Matched, o sluice.Outcome) sluice.Outcome {
	if m.Bypass != "" && o == sluice.OutcomeAllowed {
		return sluice.OutcomeBypassed
	}
	return o
}

// observe reports how each rule took part in a call: decided by the store
// (err nil, or a rule not in s.failed), or, for the rules the store failed
// with err, by their on_fail policies and the local fallback (s.local).
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
			continue // not decided: the store refused the call from memory
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
