package redisstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
)

// Coalescing. While one script call is in flight, further Take calls queue;
// when it returns, the next call carries up to Config.Coalesce of them,
// each decided atomically on its own by the script (as if each had its own
// call, in queue order). Nothing waits on a timer: an idle store sends a
// lone call at once, so coalescing adds no latency when there is nothing to
// coalesce.

// waiter states
const (
	queued    int32 = iota // waiting for a batch
	sent                   // in a batch in flight
	delivered              // the batch is writing its result
	abandoned              // its caller gave up; nobody reads its result
)

type waiter struct {
	ctx  context.Context
	hits []sluice.Hit // read only to decode, while the caller still waits
	out  []sluice.Result
	// keys and args are the request's script keys and arguments, built on
	// the caller's goroutine: a batch may be assembled after the caller gave
	// up and reused its hits for another request.
	keys  []string
	args  []any
	err   error
	state atomic.Int32
	done  chan struct{}
}

type coalescer struct {
	s     *Store
	max   int
	mu    sync.Mutex
	queue []*waiter
	busy  bool // a batch is in flight, or being assembled
}

func (c *coalescer) take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	w := &waiter{ctx: ctx, hits: hits, out: out, done: make(chan struct{}, 1)}
	w.keys, w.args = c.s.appendRequest(nil, nil, hits)
	c.mu.Lock()
	if !c.busy {
		// Idle: send this call now, on the caller's goroutine.
		c.busy = true
		c.mu.Unlock()
		w.state.Store(sent)
		c.run([]*waiter{w})
		c.handOff()
		return w.err
	}
	c.queue = append(c.queue, w)
	c.mu.Unlock()
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
	}
	switch {
	case w.state.CompareAndSwap(queued, abandoned):
		// Never sent: nothing can have been consumed.
		return ctxError(ctx, false)
	case w.state.CompareAndSwap(sent, abandoned):
		// In flight: the script may run. Its result is dropped.
		return ctxError(ctx, true)
	}
	<-w.done // being delivered right now
	return w.err
}

// handOff lets a goroutine drain what queued while the caller's own call
// was in flight, or marks the coalescer idle.
func (c *coalescer) handOff() {
	c.mu.Lock()
	if len(c.queue) == 0 {
		c.busy = false
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	go c.drain()
}

// drain sends batches until the queue is empty.
func (c *coalescer) drain() {
	for {
		c.mu.Lock()
		var batch []*waiter
		n := 0
		for _, w := range c.queue {
			if len(batch) < c.max && w.state.CompareAndSwap(queued, sent) {
				batch = append(batch, w)
			}
			n++
			if len(batch) == c.max {
				break
			}
		}
		rest := copy(c.queue, c.queue[n:])
		clear(c.queue[rest:]) // no stale waiters kept alive by the spare capacity
		c.queue = c.queue[:rest]
		if len(batch) == 0 && len(c.queue) == 0 {
			c.busy = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		if len(batch) > 0 {
			c.run(batch)
		}
	}
}

// run sends one batch and delivers each member's result.
func (c *coalescer) run(batch []*waiter) {
	err := c.send(batch)
	if errors.Is(err, sluice.ErrCorruptState) && len(batch) > 1 {
		// One member's key holds something else; the script wrote
		// nothing. Decide the members one by one, so only it fails.
		for _, w := range batch {
			if w.state.Load() == sent { // its caller still waits
				c.deliver(w, c.send([]*waiter{w}))
			}
		}
		return
	}
	for _, w := range batch {
		c.deliver(w, err)
	}
}

// send runs the script for batch, writing results into the members'
// pending outputs, and returns the batch's error.
func (c *coalescer) send(batch []*waiter) error {
	s := c.s
	// The batch runs until its earliest member's deadline; no member's
	// cancellation cancels it for the others.
	ctx := context.Background()
	var deadline time.Time
	for _, w := range batch {
		if d, ok := w.ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
			deadline = d
		}
	}
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	args := []any{s.clockArg(), len(batch)}
	for _, w := range batch {
		args = append(args, len(w.keys))
	}
	var keys []string
	for _, w := range batch {
		keys = append(keys, w.keys...)
		args = append(args, w.args...)
	}
	reply, err := s.call(ctx, keys, args)
	if err != nil {
		return err
	}
	vals, ok := reply.([]any)
	if !ok || len(vals) != 5*len(keys) {
		return badReply(reply)
	}
	for _, w := range batch {
		n := 5 * len(w.keys)
		if w.state.CompareAndSwap(sent, delivered) {
			w.err = decode(vals[:n], w.hits, w.out)
		}
		vals = vals[n:]
	}
	return nil
}

// deliver completes w with err (the batch's) unless it already has its
// result, or its caller left.
func (c *coalescer) deliver(w *waiter, err error) {
	if err != nil && !w.state.CompareAndSwap(sent, delivered) {
		return // abandoned
	}
	if err != nil {
		w.err = err
	} else if w.state.Load() != delivered {
		return // abandoned before its result came
	}
	w.done <- struct{}{}
}

func ctxError(ctx context.Context, ambiguous bool) error {
	kind := sluice.ErrUnavailable
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		kind = sluice.ErrTimeout
	}
	return &sluice.StoreError{Op: "redisstore: take", Kind: kind, Ambiguous: ambiguous, Err: ctx.Err()}
}
