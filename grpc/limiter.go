package sluicegrpc

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/rules"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// Limiter rate-limits gRPC calls by the rules of a [rules.Set] (or any
// [rules.Source]) on a [sluice.Store], as the HTTP middleware limits
// requests: the same rules, keys, buckets, on_fail policies and observer.
// Create it with [New]; install [Limiter.UnaryServerInterceptor] and
// [Limiter.StreamServerInterceptor] on the server. It is safe for
// concurrent use.
type Limiter struct {
	rules   rules.Source
	cfg     config
	decider *decide.Decider
	fit     atomic.Pointer[tapFit] // see tapUnfit
}

// New returns a limiter deciding the rules of set on store. A nil store or
// set, or an invalid option, is an error wrapping
// [sluice.ErrInvalidConfig].
func New(store sluice.Store, set rules.Source, opts ...Option) (*Limiter, error) {
	if set == nil {
		return nil, invalidConfig("New: nil rule set")
	}
	if s, ok := set.(*rules.Set); ok && s == nil {
		return nil, invalidConfig("New: nil rule set")
	}
	l := &Limiter{rules: set, cfg: config{deny: DenialStatus, onError: ErrorStatus, pushback: true}}
	var err error
	if l.decider, err = decide.NewFrontEnd("sluicegrpc", store, &l.cfg, opts); err != nil {
		return nil, err
	}
	return l, nil
}

// UnaryServerInterceptor returns the interceptor that decides each unary
// call before its handler runs: an admitted call goes on with the
// rate-limit fields in its response header metadata; a refused one ends
// with the [DenyHandler]'s error, by default [DenialStatus]'s
// ResourceExhausted; one the limiter could not decide with the
// [ErrorHandler]'s, by default [ErrorStatus]'s.
func (l *Limiter) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (_ any, err error) {
		o, header, trailer, err := l.check(ctx, info.FullMethod)
		returned := false
		defer func() { o.Finish(ctx, 0, endOf(returned, err)) }()
		if header != nil {
			_ = grpc.SetHeader(ctx, header) // fails only once headers are sent: never here
		}
		if trailer != nil {
			_ = grpc.SetTrailer(ctx, trailer)
		}
		if err != nil {
			returned = true
			return nil, err
		}
		resp, err := handler(ctx, req)
		returned = true
		return resp, err
	}
}

// StreamServerInterceptor returns the interceptor that decides each
// streaming call before its handler runs, as
// [Limiter.UnaryServerInterceptor] decides unary calls, and, with
// [WithMessageRules], each message the stream receives.
func (l *Limiter) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		o, header, trailer, err := l.check(ss.Context(), info.FullMethod)
		returned := false
		defer func() { o.Finish(ss.Context(), 0, endOf(returned, err)) }()
		if header != nil {
			_ = ss.SetHeader(header)
		}
		if trailer != nil {
			ss.SetTrailer(trailer)
		}
		if err != nil {
			returned = true
			return err
		}
		if l.cfg.messages == nil {
			err = handler(srv, ss)
			returned = true
			return err
		}
		ms := &messageStream{ServerStream: ss, l: l, fullMethod: info.FullMethod}
		err = handler(srv, ms)
		returned = true
		if refusal := ms.ended(); refusal != nil {
			return refusal // the stream ends as its refused message did
		}
		return err
	}
}

// Decide decides the call of fullMethod whose server context is ctx, as
// the interceptors do, for servers that limit elsewhere (in a handler, a
// stats handler). It finishes the decision at once, before the call has
// run, so a rule that counts by outcome (rules.Rule.Count) counts every
// call it admits: header is the response header metadata to send (the
// rate-limit fields, and retry-after with a refusal), trailer the
// trailer metadata (grpc-retry-pushback-ms with a refusal), each nil when
// empty; err, when not nil, is the status error to end the call with.
func (l *Limiter) Decide(ctx context.Context, fullMethod string) (header, trailer metadata.MD, err error) {
	o, header, trailer, err := l.check(ctx, fullMethod)
	o.Finish(ctx, 0)
	return header, trailer, err
}

// check decides the call of fullMethod and translates its outcome: the
// header and trailer metadata to send, and the error to end the call with,
// nil for an admitted call. Finish the outcome when the call is over.
func (l *Limiter) check(ctx context.Context, fullMethod string) (o *decide.Outcome, header, trailer metadata.MD, err error) {
	if o = l.tapOutcome(ctx); o != nil {
		return o, toMetadata(o.Fields), nil, nil // admitted by the tap
	}
	o = l.decider.Check(l.rules.Current(), newRequest(ctx, fullMethod, l.pattern(fullMethod)), nil)
	header, trailer, err = l.answer(ctx, fullMethod, o)
	return o, header, trailer, err
}

// answer translates o, the outcome of a call of fullMethod (or of one of
// its messages): the header and trailer metadata to send, and the error to
// end the call with, nil for an admitted call.
func (l *Limiter) answer(ctx context.Context, fullMethod string, o *decide.Outcome) (header, trailer metadata.MD, err error) {
	header = toMetadata(o.Fields)
	switch o.Verdict {
	case decide.Invalid:
		err = l.cfg.onError(ctx, o.Err, 0)
	case decide.Unavailable:
		err = l.cfg.onError(ctx, o.Err, o.RetryAfter)
	case decide.Refused:
		if l.cfg.pushback && !o.Unsatisfiable {
			trailer = metadata.MD{pushbackKey: {strconv.FormatInt(ceilMillis(o.RetryAfter), 10)}}
		}
		err = l.cfg.deny(ctx, denial(fullMethod, o))
	}
	return header, trailer, err
}

// denial describes a refused call: the exposed rules that refused it, and
// the wait, none when one never can pass.
func denial(fullMethod string, o *decide.Outcome) Denial {
	d := Denial{FullMethod: fullMethod, RetryAfter: o.RetryAfter, Unsatisfiable: o.Unsatisfiable}
	for rule := range o.Violated() {
		d.Violations = append(d.Violations, Violation{
			Rule: headers.SanitizeName(rule.Name), Kind: rule.Key.Kind(), Limit: rule.Limit,
		})
	}
	return d
}

// pushbackKey is the trailer gRPC's own retries read their delay from.
const pushbackKey = "grpc-retry-pushback-ms"

// ceilMillis returns d in whole milliseconds rounded up, at least 1.
func ceilMillis(d time.Duration) int64 {
	ms := int64((d + time.Millisecond - 1) / time.Millisecond)
	return max(ms, 1)
}

// toMetadata returns fields as header metadata, names in lower case; nil
// for none.
func toMetadata(fields []headers.Field) metadata.MD {
	if len(fields) == 0 {
		return nil
	}
	md := make(metadata.MD, len(fields))
	vals := make([]string, len(fields))
	for i, f := range fields {
		vals[i] = f.Value
		md[strings.ToLower(f.Name)] = vals[i : i+1 : i+1]
	}
	return md
}
