package sluicegrpc

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"google.golang.org/grpc/tap"
)

// Errors [Limiter.TapHandle] returns, each also wrapping
// [sluice.ErrInvalidConfig]. Test with [errors.Is].
var (
	// ErrNotInProcess: the limiter's store can never decide a call in
	// process (such as the Redis store on its own): a tap handle runs on
	// the connection's reader, where no store call may wait for the
	// network. Use memstore, or wrap the store in a lease store.
	ErrNotInProcess = errors.New("sluicegrpc: the store cannot decide in process")
	// ErrTapKey: a rule counts by a key the tap cannot see (a user, whom
	// authentication puts in the context later; a key function of your
	// own).
	ErrTapKey = errors.New("sluicegrpc: a rule's key is not known before the call is decoded")
)

// tapError is an error of TapHandle's: its sentinel, and the invalid
// configuration.
type tapError struct {
	sentinel error
	msg      string
}

func (e *tapError) Error() string   { return e.sentinel.Error() + ": " + e.msg }
func (e *tapError) Unwrap() []error { return []error{e.sentinel, sluice.ErrInvalidConfig} }

// TapHandle returns a handle for grpc.InTapHandle that decides each call
// (unary, or a stream's open) when its headers arrive, before gRPC reads
// and decodes its message or starts a goroutine for it, as consul does;
// the interceptors then only answer for it. Install both:
//
//	h, err := l.TapHandle()
//	if err != nil { ... }
//	srv := grpc.NewServer(grpc.InTapHandle(h),
//		grpc.ChainUnaryInterceptor(l.UnaryServerInterceptor()),
//		grpc.ChainStreamInterceptor(l.StreamServerInterceptor()))
//
// gRPC runs the handle on the connection's reader goroutine, where
// waiting would stall every call of the connection, so it decides only
// what the store can decide in process ([decide.Decider.CheckInProcess]):
// every call with memstore; with a lease store (store/lease), the calls
// its local tokens or remembered refusals decide. It leaves the others to
// the interceptors, which decide them with a store call, as without a tap;
// that call also refills the leases. A store that can do neither is
// refused with [ErrNotInProcess].
//
// The handle sees the method name, the incoming metadata and, on
// grpc-go's server, the connection's peer, never what interceptors add to
// the context. So it decides rules keyed by ip (keyfunc.ClientIP,
// keyfunc.IP, with the trusted proxies configured), api_key, header:*,
// endpoint and global, and joins of these; a rule set with a rule keyed
// otherwise (user, user_endpoint, a kind of your own) is refused with
// [ErrTapKey], as its identity is not known yet. Use two limiters then:
// one on the metadata rules for the tap, one on the others for the
// interceptors. A set a [rules.Source] reloads later is checked again:
// while it has such a rule, the tap leaves every call to the interceptors.
// A rule's Match function must read only what the handle sees. A call the
// rules cannot key (a required API key missing) is left to the
// interceptors, which answer it as without a tap. With
// grpc.UnknownServiceHandler, and also without it, the handle sees every
// method name a client sends, before gRPC answers an unknown one: give a
// limiter with endpoint-keyed rules [WithKnownMethods].
//
// A refusal ends the call before its message is read, with the
// [DenyHandler]'s status, by default [DenialStatus]'s ResourceExhausted
// and its details (RetryInfo, QuotaFailure): gRPC sends a tap handle's
// status error and nothing else, so the refusal carries no metadata (no
// retry-after, no rate-limit fields, no grpc-retry-pushback-ms: gRPC's
// own retries do not see the delay, [UnaryClientInterceptor] reads it
// from RetryInfo). An admitted call's rate-limit fields are sent by the
// interceptors, as header metadata.
func (l *Limiter) TapHandle() (tap.ServerInHandle, error) {
	if !l.decider.CanDecideInProcess() {
		return nil, &tapError{ErrNotInProcess, "TapHandle: the store does I/O and has no local tokens: use memstore, or a lease store"}
	}
	if name, kind := l.tapUnfit(l.rules.Current()); name != "" {
		return nil, &tapError{ErrTapKey, "TapHandle: rule " + name + " counts by " + kind}
	}
	return l.tap, nil
}

// tappedKey is the context key of the outcome of a call l's tap admitted.
type tappedKey struct{ l *Limiter }

// tapped is the outcome of a call the tap admitted, until an interceptor
// takes it.
type tapped struct {
	o atomic.Pointer[decide.Outcome]
}

// tap is the tap handle: it decides the call in process if it can.
func (l *Limiter) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	set := l.rules.Current()
	if name, _ := l.tapUnfit(set); name != "" {
		return ctx, nil
	}
	method := info.FullMethodName
	o := l.decider.CheckInProcess(set, newRequest(ctx, method, l.pattern(method)))
	if o == nil {
		return ctx, nil // the interceptors decide it
	}
	if o.Verdict == decide.Admitted {
		t := &tapped{}
		t.o.Store(o)
		return context.WithValue(ctx, tappedKey{l}, t), nil
	}
	_, _, err := l.answer(ctx, method, o)
	o.Finish(ctx, 0)
	return ctx, err
}

// tapOutcome takes the outcome of the call of ctx the tap admitted, or
// returns nil.
func (l *Limiter) tapOutcome(ctx context.Context) *decide.Outcome {
	if t, ok := ctx.Value(tappedKey{l}).(*tapped); ok {
		return t.o.Swap(nil)
	}
	return nil
}

// tapFit caches whether a set's rules are all keyed by what the tap sees.
type tapFit struct {
	set        *rules.Set
	name, kind string // the first rule that is not, and its key's kind
}

// tapUnfit returns the first rule of set keyed by what the tap cannot see,
// and its kind; "" when there is none.
func (l *Limiter) tapUnfit(set *rules.Set) (name, kind string) {
	if f := l.fit.Load(); f != nil && f.set == set {
		return f.name, f.kind
	}
	f := &tapFit{set: set}
	for _, r := range set.Rules() {
		for _, k := range []keyfunc.Key{r.Key, r.Colocate} {
			if kind := unfitKind(k); kind != "" && f.name == "" {
				f.name, f.kind = r.Name, kind
			}
		}
	}
	l.fit.Store(f)
	return f.name, f.kind
}

// unfitKind returns the kind of the first part of k that reads what a tap
// handle does not see (anything but the peer, metadata and the method),
// or "" when k reads only those (or is the zero Key). A joined key is
// judged by its parts, never by splitting its kind: "api_key" and a
// header's name hold "_" themselves.
func unfitKind(k keyfunc.Key) string {
	if k.IsZero() {
		return ""
	}
	if parts := k.Parts(); parts != nil {
		for _, p := range parts {
			if kind := unfitKind(p); kind != "" {
				return kind
			}
		}
		return ""
	}
	switch kind := k.Kind(); {
	case kind == "ip", kind == "api_key", kind == "endpoint", kind == "global", strings.HasPrefix(kind, "header:"):
		return ""
	default:
		return kind
	}
}
