// Package conn keeps a Redis endpoint's ready connections for
// redisstore: set up, PINGed and loaded with the store's scripts in the
// background, so that no request dials or shakes hands, and sends a
// command on one within the request's budget. go-redis keeps its pool in
// an internal package the same way.
package conn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
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
// [redis.Client.Conn], set up and PINGed in the background before any
// request may use it. A request takes a ready connection (waiting for one
// within its budget), sends its command and gives it back; a connection
// whose command failed on the wire (a timeout, a reset) is closed and
// replaced in the background. No request ever dials or shakes hands.

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
	src      Conner
	dial     func(ctx context.Context) error // a TCP reachability check, or nil
	size     int
	setupFor time.Duration
	log      *slog.Logger
	endpoint string
	scripts  []string
	// rtt estimates a command's round trip on the ready connections, from
	// their set-up and the commands sent on them.
	rtt RTT

	// name, when set, names the endpoint in logs instead of endpoint: a
	// Sentinel-managed primary's current address.
	name func() string

	conns  chan *redis.Conn      // ready, idle
	held   atomic.Int64          // ready, in use, or being set up
	setUp  atomic.Int64          // connections set up since the start
	wake   chan struct{}         // a connection was dropped
	failed atomic.Bool           // the last set-up failed
	down   atomic.Pointer[error] // the last set-up's error, nil after a success
	// downFor names the endpoint the last set-up failed for (see name).
	downFor atomic.Pointer[string]
	// suspect is the error of a call whose connection the server closed
	// or reset, until the next set-up tells whether the endpoint can be
	// reached; nil otherwise.
	suspect  atomic.Pointer[error]
	mu       sync.Mutex
	failedCh chan struct{} // closed and replaced when a set-up fails or a call finds the server gone
	stopped  atomic.Bool   // run returned: connections given back are closed
}

// New returns the set of o.Size ready connections taken from src, a
// client with options opt. Run keeps it full.
func New(src Conner, opt *redis.Options, o Options) *Set {
	r := &Set{src: src, size: o.Size, setupFor: o.SetupFor, log: o.Log, endpoint: o.Endpoint, name: o.Name, scripts: o.Scripts,
		conns: make(chan *redis.Conn, o.Size), wake: make(chan struct{}, 1), failedCh: make(chan struct{})}
	if opt != nil {
		r.dial = DialProbe(opt, opt.Addr)
	}
	return r
}

// DialProbe returns a check that the endpoint at addr can be reached: a
// dial with opt's dialer, closed at once. Nil when opt has no dialer.
func DialProbe(opt *redis.Options, addr string) func(context.Context) error {
	if opt.Dialer == nil {
		return nil
	}
	network, dialer := opt.Network, opt.Dialer
	return func(ctx context.Context) error {
		c, err := dialer(ctx, network, addr)
		if err == nil {
			c.Close()
		}
		return err
	}
}

// ErrNoConn is the error of a request that found no ready connection:
// while the endpoint cannot be reached, or within its budget. Nothing was
// sent. The breaker counts the first (the set-up failed), not the second:
// the calls holding the connections report how Redis is doing.
var ErrNoConn = fmt.Errorf("%w: no ready connection", redis.ErrPoolTimeout)

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
		if err := r.down.Load(); err != nil {
			if r.name != nil {
				if was := r.downFor.Load(); was != nil && *was != r.name() {
					// A Sentinel-managed primary that failed; the
					// new one's connections are being set up.
					return nil, false, &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrUnavailable,
						Err: fmt.Errorf("%w: the primary changed from %s: %w", ErrNoConn, *was, *err)}
				}
			}
			return nil, false, fmt.Errorf("%w: %w", ErrNoConn, *err)
		}
		if err := r.suspect.Load(); err != nil {
			return nil, false, &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrUnavailable,
				Err: fmt.Errorf("%w: the server closed a connection: %w", ErrNoConn, *err)}
		}
		r.mu.Lock()
		failed := r.failedCh
		r.mu.Unlock()
		select {
		case c := <-r.conns:
			return c, true, nil
		case <-failed:
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

// Idle reports whether a ready connection is idle.
func (r *Set) Idle() bool { return len(r.conns) > 0 }

// Await waits until a ready connection is idle, the endpoint cannot be
// reached, or ctx is done. It takes no connection.
func (r *Set) Await(ctx context.Context) {
	if c, _, err := r.get(ctx); err == nil {
		r.put(c, nil)
	}
}

// setDown records the outcome of a set-up: err, or nil for success. A
// failure wakes the requests waiting for a connection. Either way the
// endpoint is no longer merely suspect.
func (r *Set) setDown(err error) {
	if err == nil {
		r.down.Store(nil)
		r.suspect.Store(nil)
		return
	}
	r.down.Store(&err)
	r.suspect.Store(nil)
	r.signal()
}

// setSuspect records that a call found the server gone (err closed its
// connection): until a set-up says whether the endpoint can be reached,
// requests that find no ready connection fail at once. It wakes those
// waiting for one.
func (r *Set) setSuspect(err error) {
	if r.down.Load() != nil {
		return // known already
	}
	r.suspect.Store(&err)
	r.signal()
}

// signal wakes the requests waiting for a connection.
func (r *Set) signal() {
	r.mu.Lock()
	close(r.failedCh)
	r.failedCh = make(chan struct{})
	r.mu.Unlock()
}

// endpointName names the endpoint in logs.
func (r *Set) endpointName() string {
	if r.name != nil {
		return r.name()
	}
	return r.endpoint
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
			r.setSuspect(err)
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

// ClosedByPeer reports whether err says the server closed the connection.
func ClosedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// IsReply reports whether err is an error reply from Redis, which leaves
// its connection in sync.
func IsReply(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr)
}

// Run keeps the set full until ctx is done, then closes its connections.
// Missing connections are set up concurrently; after a failed set-up it
// waits, doubling the wait from 10 ms up to 100 ms. After a failed set-up,
// or a call that found the server gone, it checks that the endpoint
// accepts a TCP connection (one dial) before asking the client for another
// connection: a dial error would count towards the go-redis pool's own
// dial breaker, which then refuses to dial for a second, and the pool
// retries a refused dial DialerRetries times, DialerRetryTimeout apart,
// which would leave the endpoint suspect that long.
func (r *Set) Run(ctx context.Context) {
	defer func() {
		r.stopped.Store(true)
		r.closeIdle()
	}()
	backoff := time.Duration(0)
	for {
		missing := r.size - int(r.held.Load())
		if missing > 0 {
			var wg sync.WaitGroup
			var ok atomic.Int64
			for range missing {
				r.held.Add(1)
				wg.Add(1)
				go func() {
					defer wg.Done()
					if r.add(ctx) {
						ok.Add(1)
					} else {
						r.held.Add(-1)
					}
				}()
			}
			wg.Wait()
			if int(ok.Load()) < missing {
				backoff = min(max(2*backoff, 10*time.Millisecond), 100*time.Millisecond)
				if !Sleep(ctx, backoff) {
					return
				}
				continue
			}
			backoff = 0
		}
		select {
		case <-r.wake:
		case <-ctx.Done():
			return
		}
	}
}

// staleRetries bounds how many more pooled connections a set-up tries
// after one the server had closed.
const staleRetries = 3

// add sets up one connection and makes it ready.
func (r *Set) add(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, r.setupFor)
	defer cancel()
	if (r.failed.Load() || r.suspect.Load() != nil) && r.dial != nil {
		if err := r.dial(ctx); err != nil {
			r.setupFailed(err)
			return false
		}
	}
	c := r.src.Conn()
	err := r.prepare(ctx, c)
	for try := 0; err != nil && ClosedByPeer(err) && ctx.Err() == nil && try < staleRetries; try++ {
		// The pool gave a connection the server had closed (as it
		// closes them all on a restart, or when told to), which says
		// nothing about whether it can be reached: try another.
		_ = c.Close()
		c = r.src.Conn()
		err = r.prepare(ctx, c)
	}
	if err != nil {
		_ = c.Close()
		r.setupFailed(err)
		return false
	}
	r.failed.Store(false)
	r.setDown(nil)
	r.setUp.Add(1)
	r.conns <- c
	if r.stopped.Load() {
		r.closeIdle()
	}
	return true
}

// setupFailed records a failed set-up: the endpoint cannot be reached. The
// first failure after a success is logged.
func (r *Set) setupFailed(err error) {
	name := r.endpointName()
	if !r.failed.Swap(true) {
		r.log.LogAttrs(context.Background(), slog.LevelDebug, "redisstore: cannot set up a connection; retrying in the background",
			slog.String("endpoint", name), slog.String("error", err.Error()))
	}
	r.downFor.Store(&name)
	r.setDown(err)
}

// prepare runs c's handshake (its first command does) and, in one round trip
// after it, a PING and the loading of the store's scripts, so that the
// first request on a fresh server or after a restart finds them: loading a
// script the server has is cheap, and connections are set up rarely. A
// script Redis refuses to load (an ACL, say) is loaded on first use, as
// the store does whenever Redis reports one missing. The set-up, two round
// trips when the connection was dialled without delay, seeds the estimate
// of a round trip the endpoint keeps until a command is timed: half of it,
// which errs long by half the dial.
func (r *Set) prepare(ctx context.Context, c *redis.Conn) error {
	start := time.Now()
	var ping *redis.StatusCmd
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		ping = p.Ping(ctx)
		for _, src := range r.scripts {
			p.ScriptLoad(ctx, src)
		}
		return nil
	})
	if err := ping.Err(); err != nil {
		return err
	}
	if err != nil && !IsReply(err) {
		return err
	}
	r.rtt.seed(time.Since(start) / 2)
	return nil
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

// Sleep waits d or until ctx is done, reporting whether it waited d.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Idles returns how many ready connections are idle.
func (r *Set) Idles() int { return len(r.conns) }

// Size returns how many ready connections the set keeps.
func (r *Set) Size() int { return r.size }

// Down returns the error of the last set-up if it failed, or nil.
func (r *Set) Down() error {
	if down := r.down.Load(); down != nil {
		return *down
	}
	return nil
}

// RTT returns the estimate of a command's round trip on the set's
// connections.
func (r *Set) RTT() *RTT { return &r.rtt }

// CtxKind is the kind of error of a call whose ctx is done: a timeout, or
// unavailable when its caller cancelled it.
func CtxKind(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return sluice.ErrTimeout
	}
	return sluice.ErrUnavailable
}

// RTT estimates how long a successful command's round trip takes:
// an exponentially weighted moving average giving each new sample a weight
// of 1/8, as TCP's smoothed round-trip time does (RFC 6298). It is safe
// for concurrent use; the zero value has no estimate.
//
// Commands that failed are not sampled: a Redis that times out must reach
// the breaker, not turn callers away before they are sent.
type RTT struct{ ns atomic.Int64 }

// Get returns the estimate, 0 until a sample was taken.
func (e *RTT) Get() time.Duration { return time.Duration(e.ns.Load()) }

// Observe folds the round trip d into the estimate. From zero it climbs
// over some samples, erring towards sending; one slow command moves it by
// an eighth, and later ones bring it back.
func (e *RTT) Observe(d time.Duration) {
	for {
		old := e.ns.Load()
		if e.ns.CompareAndSwap(old, old+(int64(max(d, 0))-old)/8) {
			return
		}
	}
}

// seed sets the estimate to d if it has none: a connection's set-up times
// a round trip before any command has.
func (e *RTT) seed(d time.Duration) {
	e.ns.CompareAndSwap(0, int64(max(d, 1)))
}
