package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// endpoint is one Redis endpoint the store sends commands to (a single
// node, or the primary a Sentinel-managed client follows): its name in
// events, logs and metrics, its circuit breaker and its ready connections.
type endpoint struct {
	name    string
	client  Client
	breaker *breaker  // nil when disabled
	ready   *readySet // nil when the client cannot hand out connections, or turned off
}

// process sends cmd on a ready connection, waiting for one within ctx; or
// through the client when the endpoint keeps none.
func (e *endpoint) process(ctx context.Context, cmd redis.Cmder) error {
	if e.ready == nil {
		return e.client.Process(ctx, cmd)
	}
	c, err := e.ready.get(ctx)
	if err != nil {
		cmd.SetErr(err)
		return err
	}
	err = c.Process(ctx, cmd)
	e.ready.put(c, err)
	return err
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
// timeout. A connection found dead is dropped and the next one tried. (A
// script cache a restart emptied is reloaded by the first call after, on
// NOSCRIPT.)
func (e *endpoint) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.breaker.probeFor)
	defer cancel()
	for {
		cmd := redis.NewStatusCmd(ctx, "ping")
		err := e.process(ctx, cmd)
		if err == nil || e.ready == nil || ctx.Err() != nil || isReply(err) {
			return err
		}
	}
}
