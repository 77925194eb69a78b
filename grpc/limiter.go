package sluicegrpc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
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
	rules   Source
	cfg     config
	decider *decide.Decider
	pool    sync.Pool // *scratch
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
	d        decide.Decision
	policies []headers.Policy
	exposed  []sluice.Result
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
	d, err := decide.New(store, append(cfg.decide, decide.WithLogger(cfg.logger))...)
	if err != nil {
		return nil, err
	}
	l := &Limiter{rules: set, cfg: cfg, decider: d}
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
	l.decider.Decide(ctx, &s.m, &s.d)
	d := &s.d
	if len(s.m.Hits) == 0 {
		return nil
	}
	if d.Headers() {
		l.writeHeaders(h, s, d.Verdict == decide.Admitted)
	}
	switch d.Verdict {
	case decide.Unavailable:
		retry := d.RetryAfter()
		headers.SetRetryAfter(h, retry)
		return l.cfg.onError(ctx, fmt.Errorf("%w: %w", ErrStoreFailed, d.Err), retry)
	case decide.Refused:
		return l.refuse(r, h, s)
	}
	return nil
}

// writeHeaders describes in h the exposed rules the store decided: all in
// RateLimit-Policy, the binding one in RateLimit.
func (l *Limiter) writeHeaders(h http.Header, s *scratch, admitted bool) {
	if l.cfg.headers == headers.None {
		return
	}
	s.policies = s.d.AppendPolicies(s.policies[:0])
	s.exposed = s.exposed[:0]
	for _, p := range s.policies {
		s.exposed = append(s.exposed, p.Result)
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
