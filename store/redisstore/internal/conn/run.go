package conn

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Run keeps the set full until ctx is done, then closes its connections.
// Missing connections are set up concurrently; after a failed set-up it
// waits, doubling the wait from 10 ms up to 100 ms. While the endpoint is
// down or suspect (a set-up failed, or a call found the server gone), it
// checks that the endpoint accepts a TCP connection (one dial, see
// DialProbe) before asking the client for another connection.
func (r *Set) Run(ctx context.Context) {
	defer func() {
		r.stopped.Store(true)
		r.closeIdle()
	}()
	backoff := time.Duration(0)
	for {
		missing := r.opt.Size - int(r.held.Load())
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

// staleRetries bounds how many more pooled connections a set-up tries
// after one the server had closed.
const staleRetries = 3

// add sets up one connection and makes it ready.
func (r *Set) add(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, r.opt.SetupFor)
	defer cancel()
	if r.health.Fault() != nil && r.dial != nil {
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
	r.health.SetUp()
	r.conns <- c
	if r.stopped.Load() {
		r.closeIdle()
	}
	return true
}

// setupFailed records a failed set-up: the endpoint cannot be reached. It
// wakes the requests waiting for a connection. The first failure after a
// success is logged.
func (r *Set) setupFailed(err error) {
	name := r.opt.Endpoint
	if r.opt.Name != nil {
		name = r.opt.Name()
	}
	if r.health.SetDown(err, name) {
		r.opt.Log.LogAttrs(context.Background(), slog.LevelDebug, "redisstore: cannot set up a connection; retrying in the background",
			slog.String("endpoint", name), slog.String("error", err.Error()))
	}
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
		for _, src := range r.opt.Scripts {
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
