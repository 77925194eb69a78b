package sluicegrpc

import (
	"context"
	"errors"
	"time"

	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/rules"
)

// Option configures a [Limiter]: the decide package's options (the
// budget, observer, logger, instances, header modes and clock:
// [decide.WithBudget], [decide.WithHeaders], ...), or the interceptors'
// own below. The header modes select the rate-limit fields sent as
// response header metadata, named as the HTTP fields are, in lower case
// ("ratelimit-policy", "ratelimit", "x-ratelimit-remaining", ...).
type Option = decide.Option

type config struct {
	deny     DenyHandler
	onError  ErrorHandler
	known    func(string) bool
	pushback bool
	messages rules.Source
}

// DenyHandler returns the error a call the rules refused ends with. The
// default is [DenialStatus].
type DenyHandler func(ctx context.Context, d Denial) error

// WithDenyHandler replaces the default refusal, [DenialStatus].
func WithDenyHandler(h DenyHandler) Option {
	return decide.Setting(func(c *config) error {
		if h == nil {
			return errors.New("WithDenyHandler: nil handler")
		}
		c.deny = h
		return nil
	})
}

// ErrorHandler returns the error a call the limiter could not decide ends
// with: a rule could not key it (err wraps [decide.ErrKeyFailed]), its
// context set a negative cost ([decide.ErrInvalidCost]), or the store
// failed and a rule's policy is closed ([decide.ErrStoreFailed] and the
// store's error; retry is how long the store expects to stay unavailable,
// at least a second). The default is [ErrorStatus]. It must return a
// status error and never show err's text to the client.
type ErrorHandler func(ctx context.Context, err error, retry time.Duration) error

// WithErrorHandler replaces the default error statuses, [ErrorStatus].
func WithErrorHandler(h ErrorHandler) Option {
	return decide.Setting(func(c *config) error {
		if h == nil {
			return errors.New("WithErrorHandler: nil handler")
		}
		c.onError = h
		return nil
	})
}

// WithKnownMethods names the methods the server serves: a call of any
// other method is keyed, and matched, as the route pattern
// keyfunc.Unmatched ("POST <unmatched>" for an endpoint key) rather than by
// the name its client sent. It matters only on a server with
// grpc.UnknownServiceHandler (a proxy), whose stream interceptors see any
// method name a client invents, which would otherwise mint a bucket per
// name; without one, gRPC answers unknown methods itself, before any
// interceptor runs. known must be safe for concurrent use and fast.
func WithKnownMethods(known func(fullMethod string) bool) Option {
	return decide.Setting(func(c *config) error {
		if known == nil {
			return errors.New("WithKnownMethods: nil function")
		}
		c.known = known
		return nil
	})
}

// WithoutPushback stops the limiter from sending the grpc-retry-pushback-ms
// trailer with a refusal. By default a refusal that can pass later carries
// it, the retry delay in milliseconds (rounded up), so that a client whose
// service config has a retry policy for RESOURCE_EXHAUSTED waits exactly
// that long before gRPC retries the call itself.
func WithoutPushback() Option {
	return decide.Setting(func(c *config) error { c.pushback = false; return nil })
}

// WithMessageRules makes every message a streaming call receives count
// against the rules of set (a [rules.Set], or any [rules.Source], such as a
// rule file reloaded live): each successful RecvMsg of the stream the
// handler sees is decided by the rules of set the call matches, all of
// them in one store call through the same pipeline as a call (budget,
// on_fail, observer, logs), before the message reaches the handler. A
// message refused ends the stream: RecvMsg returns the [DenyHandler]'s
// error, by default [DenialStatus]'s ResourceExhausted with the exact
// retry delay, and the call ends with it whatever the handler returns;
// its trailer carries retry-after and grpc-retry-pushback-ms (see
// [WithoutPushback]). A message the limiter could not decide ends the
// stream the same way with the [ErrorHandler]'s error. io.EOF and the
// transport's own errors are never charged.
//
// Opening the stream is still decided by the limiter's own rules, as
// without this option: a stream costs the server a handler and its
// resources before it sends anything, and a limit on messages alone would
// let a client hold any number of idle streams open. To limit streams by
// their messages only, leave the streaming methods out of the limiter's
// rules (match.routes, or a rule set of their own). Unary calls are
// never decided by set: their one message is the call. Give the message
// rules names of their own: a rule named as one of the limiter's counts
// in the same buckets.
func WithMessageRules(set rules.Source) Option {
	return decide.Setting(func(c *config) error {
		if set == nil {
			return errors.New("WithMessageRules: nil rule set")
		}
		if s, ok := set.(*rules.Set); ok && s == nil {
			return errors.New("WithMessageRules: nil rule set")
		}
		c.messages = set
		return nil
	})
}
