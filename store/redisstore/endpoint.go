package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
)

// endpoint is one Redis endpoint the store sends commands to (a single
// node, or the primary a Sentinel-managed client follows): its name in
// events, logs and metrics, its circuit breaker and its ready connections.
type endpoint struct {
	name    string
	client  Client
	breaker *breaker  // nil when disabled
	ready   *readySet // nil when the client cannot hand out connections, or turned off
	// rtt estimates a command's round trip on the ready connections, from
	// their set-up and the commands sent on them.
	rtt rttEstimate
}

// process sends cmd on a ready connection, waiting for one within ctx; or
// through the client when the endpoint keeps none.
//
// A command that had to wait for its connection is sent only if it has
// more time left than a round trip takes (the estimate of rtt): one that
// would very likely time out fails at once instead, unambiguously, since
// nothing was sent, and the breaker does not count it. Sent, it would time
// out ambiguously and count as Redis failing, when it only waited: as the
// first requests of a store whose connections are still being set up do.
func (e *endpoint) process(ctx context.Context, cmd redis.Cmder) error {
	if e.ready == nil {
		return e.client.Process(ctx, cmd)
	}
	c, waited, err := e.ready.get(ctx)
	if err != nil {
		cmd.SetErr(err)
		return err
	}
	start := time.Now()
	if waited {
		if err := tooLate(ctx, start, e.rtt.get()); err != nil {
			e.ready.put(c, nil)
			cmd.SetErr(err)
			return err
		}
	}
	err = c.Process(ctx, cmd)
	e.ready.put(c, err)
	if err == nil {
		e.rtt.observe(time.Since(start))
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
			Err: fmt.Errorf("%w: %v left after waiting for a connection, a round trip takes about %v", errNoConn, max(left, 0), rtt)}
	}
	return nil
}

// watch probes the endpoint in the background whenever its breaker opens,
// until ctx is done: after OpenFor, then again after each OpenFor the
// breaker stays open.
func (e *endpoint) watch(ctx context.Context) {
	for {
		select {
		case <-e.breaker.opened:
		case <-ctx.Done():
			return
		}
		for {
			due, wait := e.breaker.probeDue()
			if due {
				e.breaker.probed(e.probe(ctx))
				continue
			}
			if wait <= 0 {
				break // closed
			}
			if !sleep(ctx, wait) {
				return
			}
		}
	}
}

// probe PINGs the endpoint on a ready connection within the breaker's probe
// timeout. A connection found dead is dropped and the next one tried; when
// none is ready (the endpoint cannot be reached, or is suspect), the probe
// fails. (A script cache a restart emptied is reloaded by the first call
// after, on NOSCRIPT.)
func (e *endpoint) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.breaker.probeFor)
	defer cancel()
	for {
		cmd := redis.NewStatusCmd(ctx, "ping")
		err := e.process(ctx, cmd)
		if err == nil || e.ready == nil || ctx.Err() != nil || isReply(err) || errors.Is(err, errNoConn) {
			return err
		}
	}
}
