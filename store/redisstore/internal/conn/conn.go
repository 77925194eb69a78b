// Package conn keeps a Redis endpoint's ready connections for
// redisstore: set up, PINGed and loaded with the store's scripts in the
// background, so that no request dials or shakes hands, and sends a
// command on one within the request's budget. go-redis keeps its pool in
// an internal package the same way. It also keeps what the store knows of
// whether an endpoint can be reached (see Health), for the ready
// connections and for the endpoints the store reaches through go-redis's
// pool alike.
package conn

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/sluicehq/sluice"
)

// Ready connections. go-redis sets a connection up on its first use, under
// the context of the command that uses it: the handshake (HELLO and, with
// the default options, CLIENT SETINFO and CLIENT MAINT_NOTIFICATIONS)
// costs round trips out of the request's budget, and a timeout closes the
// connection, so under latency a pool loses warm connections and every new
// one spends a request's budget on its handshake. So the store keeps its
// own set of connections, each taken from the client's pool with
// [redis.Client.Conn], set up and PINGed in the background (see Run)
// before any request may use it. A request takes a ready connection
// (waiting for one within its budget), sends its command and gives it
// back; a connection whose command failed on the wire (a timeout, a reset)
// is closed and replaced in the background. No request ever dials or
// shakes hands.

// Safe reports whether dedicated connections of a client with options
// opt may be set up while others are in use. go-redis writes the client's
// shared options when a handshake finds that the server refuses maintenance
// notifications, under a lock each dedicated connection has its own copy
// of: only a handshake that cannot ask for them is safe.
func Safe(opt *redis.Options) bool {
	return opt != nil && (opt.Protocol == 2 ||
		opt.MaintNotificationsConfig != nil && opt.MaintNotificationsConfig.Mode == maintnotifications.ModeDisabled)
}

// Conner is the capability of a client that can hand out a dedicated
// connection: *redis.Client has it.
type Conner interface {
	Conn() *redis.Conn
}

// Options configure a Set.
type Options struct {
	Size     int           // connections to keep
	SetupFor time.Duration // bounds a connection's set-up
	Log      *slog.Logger
	Endpoint string // names the endpoint in logs
	// Name, when set, names the endpoint in logs instead of Endpoint: a
	// Sentinel-managed primary's current address.
	Name func() string
	// Scripts are loaded on every connection set up.
	Scripts []string
}

// Set is an endpoint's set of ready connections. It is safe for
// concurrent use.
type Set struct {
	src  Conner
	opt  Options
	dial func(ctx context.Context) error // a TCP reachability check, or nil
	// rtt estimates a command's round trip on the ready connections, from
	// their set-up and the commands sent on them.
	rtt    RTT
	health Health // told by every set-up, and by calls that find the server gone

	conns   chan *redis.Conn // ready, idle
	held    atomic.Int64     // ready, in use, or being set up
	wake    chan struct{}    // a connection was dropped
	stopped atomic.Bool      // Run returned: connections given back are closed
}

// New returns the set of o.Size ready connections taken from src, a
// client with options opt. Run keeps it full.
func New(src Conner, opt *redis.Options, o Options) *Set {
	r := &Set{src: src, opt: o, conns: make(chan *redis.Conn, o.Size), wake: make(chan struct{}, 1)}
	if opt != nil {
		r.dial = DialProbe(opt, opt.Addr)
	}
	return r
}

// get returns a ready connection, waiting for one until ctx is done, and
// whether it waited. While the endpoint cannot be reached (the last set-up
// failed), a request that finds no ready connection fails at once instead,
// and so does one made after a call found the server gone (its connection
// closed or reset), until a set-up tells whether the endpoint can be
// reached: unambiguously, and without counting towards the breaker, since
// Redis may only have closed one connection. If it cannot, the set-up
// says so within a dial. Likewise, when a Sentinel-managed primary other
// than the one the last set-up failed for is named, the requests made
// until a set-up tells about it fail at once without counting towards its
// breaker, which the old primary's failure says nothing about.
func (r *Set) get(ctx context.Context) (c *redis.Conn, waited bool, err error) {
	select {
	case c := <-r.conns:
		return c, false, nil
	default:
	}
	for {
		worse := r.health.Worse() // before the fault is read: no news is missed
		if err := r.unready(); err != nil {
			return nil, false, err
		}
		select {
		case c := <-r.conns:
			return c, true, nil
		case <-worse:
		case <-ctx.Done():
			return nil, true, &sluice.StoreError{Op: "redisstore: take", Kind: CtxKind(ctx), Err: fmt.Errorf("%w within the budget: %w", ErrNoConn, ctx.Err())}
		}
		select {
		case c := <-r.conns:
			return c, true, nil
		default:
		}
	}
}

// unready returns the error of a request that finds no ready connection
// while the endpoint is down or suspect, or nil while it is up.
func (r *Set) unready() error {
	f := r.health.Fault()
	switch {
	case f == nil:
		return nil
	case f.Suspect:
		return &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrUnavailable,
			Err: fmt.Errorf("%w: the server closed a connection: %w", ErrNoConn, f.Err)}
	case r.opt.Name != nil && f.Name != r.opt.Name():
		// A Sentinel-managed primary that failed; the new one's
		// connections are being set up.
		return &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrUnavailable,
			Err: fmt.Errorf("%w: the primary changed from %s: %w", ErrNoConn, f.Name, f.Err)}
	}
	return fmt.Errorf("%w: %w", ErrNoConn, f.Err)
}

// Process sends cmd on a ready connection, waiting for one within ctx.
//
// A command that had to wait for its connection is sent only if it has
// more time left than a round trip takes (the estimate of rtt): one that
// would very likely time out fails at once instead, unambiguously, since
// nothing was sent, and the breaker does not count it. Sent, it would time
// out ambiguously and count as Redis failing, when it only waited: as the
// first requests of a store whose connections are still being set up do.
func (r *Set) Process(ctx context.Context, cmd redis.Cmder) error {
	c, waited, err := r.get(ctx)
	if err != nil {
		cmd.SetErr(err)
		return err
	}
	start := time.Now()
	if waited {
		if err := tooLate(ctx, start, r.rtt.Get()); err != nil {
			r.put(c, nil)
			cmd.SetErr(err)
			return err
		}
	}
	err = c.Process(ctx, cmd)
	r.put(c, err)
	if err == nil {
		r.rtt.Observe(time.Since(start))
	}
	return err
}

// tooLate returns the error of a command that has no more time left at
// now, by ctx's deadline, than a round trip of rtt takes, or nil.
func tooLate(ctx context.Context, now time.Time, rtt time.Duration) error {
	deadline, ok := ctx.Deadline()
	if !ok || rtt <= 0 {
		return nil
	}
	if left := deadline.Sub(now); left <= rtt {
		return &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrTimeout,
			Err: fmt.Errorf("%w: %v left after waiting for a connection, a round trip takes about %v", ErrNoConn, max(left, 0), rtt)}
	}
	return nil
}

// Check sends a PING on a ready connection, waiting for one within ctx (as
// Process does), and returns its error: nil when the endpoint answered
// now. An idle connection says nothing of whether the server is still
// there (a server that went away closed it, and nothing reads it until it
// is used), so whoever asks whether the endpoint is ready asks the server.
// A connection found closed is dropped as after any command (see put): the
// endpoint turns suspect until a set-up tells whether it can be reached.
func (r *Set) Check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		// Sent, it would fail and cost a good connection.
		return &sluice.StoreError{Op: "redisstore: ready", Kind: CtxKind(ctx), Err: err}
	}
	return r.Process(ctx, redis.NewStatusCmd(ctx, "ping"))
}

// Idle reports whether a ready connection is idle.
func (r *Set) Idle() bool { return len(r.conns) > 0 }

// Await waits until a ready connection is idle, the endpoint cannot be
// reached, or ctx is done. It takes no connection.
func (r *Set) Await(ctx context.Context) {
	if c, _, err := r.get(ctx); err == nil {
		r.put(c, nil)
	}
}

// put gives c back after a command whose error was err. A connection that
// failed on the wire may hold a late reply or be dead: it is closed, and
// the set refills in the background.
//
// A connection the server closed (EOF, reset) says that it may have closed
// the others too, as a restart does, or be gone, as a crash does: the idle
// ones are replaced as well, so that the next requests do not meet them
// one by one, and the endpoint is suspect (see get) until the set-up of
// their replacements, which first dials it, tells.
func (r *Set) put(c *redis.Conn, err error) {
	if err != nil && !IsReply(err) {
		r.drop(c)
		if ClosedByPeer(err) {
			r.dropIdle()
			r.health.SetSuspect(err)
		}
		return
	}
	r.conns <- c // never blocks: at most size are held
	if r.stopped.Load() {
		r.closeIdle()
	}
}

// drop closes c and asks for a replacement.
func (r *Set) drop(c *redis.Conn) {
	_ = c.Close()
	r.held.Add(-1)
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// dropIdle drops the idle connections.
func (r *Set) dropIdle() {
	for {
		select {
		case c := <-r.conns:
			r.drop(c)
		default:
			return
		}
	}
}

// closeIdle closes the ready connections once the set stops.
func (r *Set) closeIdle() {
	for {
		select {
		case c := <-r.conns:
			_ = c.Close()
		default:
			return
		}
	}
}

// Idles returns how many ready connections are idle.
func (r *Set) Idles() int { return len(r.conns) }

// Size returns how many ready connections the set keeps.
func (r *Set) Size() int { return r.opt.Size }

// Down returns the error of the last set-up if it failed, or nil.
func (r *Set) Down() error { return r.health.Down() }

// RTT returns the estimate of a command's round trip on the set's
// connections.
func (r *Set) RTT() *RTT { return &r.rtt }
