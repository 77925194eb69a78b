package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/redisstore/internal/conn"
)

// An endpoint found unreachable fails calls at once. A command sent to a
// node that is gone waits, inside go-redis, for what cannot succeed: a dial
// retried DialerRetries times, DialerRetryTimeout apart, or on Cluster a
// pipeline whose connection could not be had sent again after a backoff,
// up to MaxRedirects times, until the request's budget is spent. So the
// store remembers an endpoint it found unreachable (a dial refused or
// failed, by a call or by the client's pool) and fails the calls it would
// send there at once, unsent, with [sluice.ErrUnavailable], unambiguously,
// until a background dial reaches it again; the breaker counts them as it
// counts the dial errors they stand for. A connection the server closed or
// reset makes the endpoint suspect: calls fail at once the same way, but
// uncounted (Redis may have closed one connection only), until the
// background dial, made at once, says whether it can be reached.
// Endpoints with ready connections keep the same health through their
// set-up (see conn.Set).

// errUnreachable wraps the error of a call the store did not send because
// its endpoint was found unreachable.
var errUnreachable = errors.New("unreachable, not sent")

// Timing of the background dial of an unreachable endpoint: it waits
// between attempts, doubling the wait up to reachMaxWait; each attempt
// has at most reachDialTimeout (or the client's DialTimeout if shorter).
// The dialling stops when no call has asked for the endpoint for
// reachIdle, or the store is closed; the next call that finds it
// unreachable starts it again.
const (
	reachFirstWait   = 5 * time.Millisecond
	reachMaxWait     = 100 * time.Millisecond
	reachDialTimeout = time.Second
	reachIdle        = time.Second
)

// reach is what the store knows of whether an endpoint that it reaches
// through a go-redis pool (a Redis Cluster master) can be reached: its
// health, which the calls sent there, the pool's dials and a background
// dial tell. It is safe for concurrent use.
type reach struct {
	addr        string
	dial        func(ctx context.Context) error // one TCP dial, closed at once; nil: never down
	dialTimeout time.Duration
	closed      func() bool // the store is closed: stop dialling

	health  conn.Health
	dialing atomic.Bool  // the background dial runs
	asked   atomic.Int64 // when a call last found it down (Unix ns)
}

// newReach returns the reachability of the endpoint at addr that client
// dials, for a store that is closed once closed reports true. It is never
// down when the client dials nothing of its own.
func newReach(addr string, client *redis.Client, closed func() bool) *reach {
	r := &reach{addr: addr, closed: closed, dialTimeout: reachDialTimeout}
	if client == nil {
		return r
	}
	opt := client.Options()
	if opt == nil || opt.Dialer == nil {
		return r
	}
	if opt.DialTimeout > 0 {
		r.dialTimeout = min(r.dialTimeout, opt.DialTimeout)
	}
	r.dial = conn.DialProbe(opt, addr)
	return r
}

// check returns nil when a call may be sent to the endpoint, or the error
// of a call that fails at once, unsent. While the endpoint is down it is
// an error wrapping errUnreachable, which classify reads as unavailable
// and unambiguous, and the error that found it unreachable; while it is
// only suspect, a [*sluice.StoreError] of the same kind, classified
// already, which the breaker does not count.
func (r *reach) check(op string) error {
	f := r.health.Fault()
	if f == nil {
		return nil
	}
	r.asked.Store(time.Now().UnixNano())
	r.redial()
	if f.Suspect {
		return &sluice.StoreError{Op: op, Kind: sluice.ErrUnavailable,
			Err: fmt.Errorf("%s %w: the server closed a connection: %w", r.addr, errUnreachable, f.Err)}
	}
	return fmt.Errorf("%s %w: %w", r.addr, errUnreachable, f.Err)
}

// observe learns from the error of a call sent to the endpoint: a dial
// that failed marks it down; a connection the server closed or reset makes
// it suspect and dials it at once, which marks it down if it fails.
func (r *reach) observe(err error) {
	switch {
	case err == nil || r.dial == nil:
	case dialFailed(err):
		r.setDown(err)
	case conn.ClosedByPeer(err):
		if r.health.SetSuspect(err) {
			r.asked.Store(time.Now().UnixNano())
		}
		r.redial()
	}
}

// setDown marks the endpoint unreachable because of err, and dials it in
// the background until it answers.
func (r *reach) setDown(err error) {
	if r.dial == nil {
		return
	}
	if r.health.SetDown(err, r.addr) {
		r.asked.Store(time.Now().UnixNano())
	}
	r.redial()
}

// redial starts the background dial unless it runs.
func (r *reach) redial() {
	if r.dial == nil || r.dialing.Swap(true) {
		return
	}
	go r.dialUntilUp()
}

// dialUntilUp dials the endpoint, at once and then after growing waits,
// until a dial succeeds (the endpoint is up again), nothing asked for it
// for reachIdle, or the store is closed.
func (r *reach) dialUntilUp() {
	defer r.dialing.Store(false)
	wait := time.Duration(0)
	for {
		if wait > 0 {
			time.Sleep(wait)
		}
		wait = min(max(2*wait, reachFirstWait), reachMaxWait)
		if r.closed() || time.Since(time.Unix(0, r.asked.Load())) > reachIdle {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), r.dialTimeout)
		err := r.dial(ctx)
		cancel()
		if err == nil {
			r.health.SetUp()
			return
		}
		r.health.SetDown(err, r.addr)
	}
}

// DialHook learns from every dial the client makes to the endpoint, the
// pool's retries included: a failed one marks it down at once, before the
// call that made it has returned, so that the calls after it are not sent
// into the same dial; a successful one says it is up.
func (r *reach) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		switch {
		case err == nil:
			r.health.SetUp()
		case !errors.Is(err, context.Canceled):
			r.setDown(err)
		}
		return c, err
	}
}

// ProcessHook passes commands through.
func (r *reach) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook passes pipelines through.
func (r *reach) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// dialFailed reports whether err says a connection could not be opened:
// nothing was sent.
func dialFailed(err error) bool {
	var oerr *net.OpError
	return errors.As(err, &oerr) && oerr.Op == "dial" && !errors.Is(err, context.Canceled)
}
