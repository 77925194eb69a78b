package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/redisstore/internal/conn"
)

// Coalescing. While Config.CoalesceLanes script calls are in flight, further Take calls
// queue (a queue whose oldest call has waited half a round trip goes on a
// spare lane, see overdue); when one returns, the next call carries up to
// Config.Coalesce of them, each decided atomically on its own by the script (as if each had
// its own call, in queue order within the batch; the calls in flight on
// the lanes run in either order, as concurrent calls do). Nothing
// waits on a timer: a store with a free lane sends a lone call at once, on
// the caller's goroutine and under the caller's context, as a store
// without coalescing does, so coalescing adds no latency and no
// allocation when there is nothing to coalesce.
//
// A batch runs until its earliest member's deadline. So a member with less
// time left than a batch takes would very likely time the whole batch out:
// every member would get an ambiguous timeout, and the breaker would count a
// failure that says nothing about Redis. When a batch is assembled, a member
// whose context is done, or whose time left is no more than the estimate of
// a round trip, is left out: it fails at once, unambiguously (the script
// never ran for it). The estimate is a moving average of recent successful
// calls' round trips; it starts at zero, so until a call has been timed only
// expired members are left out. It is compared with the time left as it is,
// without a safety factor: a member with less time left than an average
// round trip would more likely than not set off the deadline, and a larger
// factor would turn away members that would have made it, each a failed
// request for its caller.

// defaultLanes is how many script calls a coalescing store keeps in
// flight by default (Config.CoalesceLanes). With one, Redis idles while the
// client decodes a batch and assembles the next, and a call arriving at a
// lightly loaded store waits for the call in flight; with two, calls from
// a few concurrent requests already queue behind each other. With four, up
// to four concurrent requests go at once, as without coalescing, and
// beyond that calls share batches.
const defaultLanes = 4

// waiter states
const (
	queued    int32 = iota // waiting for a batch
	sent                   // in a batch in flight
	delivered              // its result is being written: by its batch, or by drain leaving it out
	abandoned              // its caller gave up; nobody reads its result
)

type waiter struct {
	ctx    context.Context
	queued time.Time // when it queued, by the coalescer's clock
	// req holds the request's script keys and arguments, built on the
	// caller's goroutine: a batch may be assembled after the caller gave up
	// and reused its hits for another request. Its hits and out are read
	// only to decode, while the caller still waits.
	req   request
	err   error
	state atomic.Int32
	done  chan struct{}
}

type coalescer struct {
	scripts *decider
	// conns are the endpoint's ready connections, nil when it keeps none
	// (see awaitConn).
	conns *conn.Set
	max   int // calls per batch
	lanes int // script calls in flight
	// now tells the time for budgets and round trips; nil means time.Now.
	// Only tests set it, through export_test.go.
	now func() time.Time
	// beforeQueue, when set, runs between a failed claim and queueing.
	// Only tests set it, through export_test.go, to free the lanes there.
	beforeQueue func()
	// sent, when set, is told how many requests each script call carries.
	// Only tests and benchmarks set it, through coalesce_export_test.go.
	sent func(requests int)
	// rtt estimates a successful call's round trip. shared: it is the
	// ready connections', which time each command and their set-up (see
	// newCoalescer); otherwise the coalescer times its calls (see
	// observe).
	rtt    *conn.RTT
	shared bool
	mu     sync.Mutex
	queue  []*waiter
	busy   int // calls in flight or being assembled: c.lanes, and spare ones (see overdue)
}

// newCoalescer returns a coalescer of the calls of scripts to one
// endpoint, whose ready connections are conns (nil when it keeps none),
// batching up to max calls, with lanes calls in flight.
func newCoalescer(scripts *decider, conns *conn.Set, max, lanes int) *coalescer {
	c := &coalescer{scripts: scripts, conns: conns, max: max, lanes: lanes, rtt: &conn.RTT{}}
	if conns != nil {
		c.rtt, c.shared = conns.RTT(), true
	}
	return c
}

func (c *coalescer) take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	if c.claim() {
		return c.takeNow(ctx, hits, out)
	}
	// Every lane is busy: queue, with the request's keys and arguments
	// built outside the lock.
	w := newWaiter(ctx, c.scripts.newRequest(hits, out))
	if c.enqueue(w) {
		return c.takeNow(ctx, hits, out)
	}
	return w.wait()
}

func newWaiter(ctx context.Context, req request) *waiter {
	return &waiter{ctx: ctx, req: req, done: make(chan struct{}, 1)}
}

// enqueue queues w, unless a lane came free since a failed claim: then it
// takes the lane and reports true, and the caller sends w's request on it
// (its goroutine, finding the queue empty, released the lane; nobody else
// would send w). When the queue is overdue, it sends it on a spare lane.
func (c *coalescer) enqueue(w *waiter) (claimed bool) {
	w.queued = c.clock()
	if c.beforeQueue != nil {
		c.beforeQueue()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy < c.lanes {
		c.busy++
		return true
	}
	c.queue = append(c.queue, w)
	if c.overdue(w.queued) {
		c.busy++
		go c.drain()
	}
	return false
}

// wait waits for a queued w's result, or for its context to end.
func (w *waiter) wait() error {
	select {
	case <-w.done:
		return w.err
	case <-w.ctx.Done():
	}
	switch {
	case w.state.CompareAndSwap(queued, abandoned):
		// Never sent: nothing can have been consumed.
		return ctxError(w.ctx, false)
	case w.state.CompareAndSwap(sent, abandoned):
		// In flight: the script may run. Its result is dropped.
		return ctxError(w.ctx, true)
	}
	<-w.done // being delivered right now
	return w.err
}

// overdue reports, with c.mu held, whether the queue's oldest call has
// waited at now more than half a round trip and a spare lane is free: the
// lanes' calls, sent close together, return close together, so a call that
// queues just after them would wait nearly a whole round trip for its
// batch, and then another for the batch's reply. A spare lane sends the
// queue at once, so that no call waits much more than half a round trip
// before it is sent; when its batch returns, it drains as the other lanes
// do, and their calls spread out over the round trip.
func (c *coalescer) overdue(now time.Time) bool {
	rtt := c.estimate()
	return rtt > 0 && c.busy < c.lanes+c.lanes/2 && len(c.queue) > 0 && now.Sub(c.queue[0].queued) > rtt/2
}

// claim takes a free lane, if there is one and nothing queues for it.
func (c *coalescer) claim() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy < c.lanes && len(c.queue) == 0 {
		c.busy++
		return true
	}
	return false
}

// takeNow decides a request on a lane claimed for it, on the caller's
// goroutine, as a store without coalescing does: no waiter, and the
// caller's own context, so its cancellation cancels only its own call.
func (c *coalescer) takeNow(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	reqs := []*request{{}}
	*reqs[0] = c.scripts.newRequest(hits, out)
	if c.sent != nil {
		c.sent(1)
	}
	reply, err := c.callNow(ctx, reqs)
	if err != nil {
		return err
	}
	return c.scripts.finish(reply, reqs)
}

// callNow sends the lone call of takeNow and frees its lane, even if the
// client panics (a hook may): a lane kept would queue every later call.
func (c *coalescer) callNow(ctx context.Context, reqs []*request) (reply any, err error) {
	defer c.handOff()
	cmd := takeCommand(reqs)
	if c.shared { // the ready connections time it (see observe)
		return c.scripts.send.one(ctx, "redisstore: take", cmd)
	}
	start := c.clock()
	reply, err = c.scripts.send.one(ctx, "redisstore: take", cmd)
	if err == nil {
		c.observe(c.clock().Sub(start))
	}
	return reply, err
}

// handOff lets a goroutine drain what queued while the caller's own call
// was in flight, or frees its lane.
func (c *coalescer) handOff() {
	c.mu.Lock()
	if len(c.queue) == 0 {
		c.busy--
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	go c.drain()
}

// drain sends batches until the queue is empty.
func (c *coalescer) drain() {
	for {
		c.awaitConn()
		c.mu.Lock()
		var batch []*waiter
		n := 0
		now, rtt := c.clock(), c.estimate()
		for _, w := range c.queue {
			n++
			if err := unfit(w.ctx, now, rtt); err != nil {
				leaveOut(w, err)
			} else if w.state.CompareAndSwap(queued, sent) {
				batch = append(batch, w)
				if len(batch) == c.max {
					break
				}
			}
		}
		rest := copy(c.queue, c.queue[n:])
		clear(c.queue[rest:]) // no stale waiters kept alive by the spare capacity
		c.queue = c.queue[:rest]
		if len(batch) == 0 && len(c.queue) == 0 {
			c.busy--
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		if len(batch) > 0 {
			c.run(batch)
		}
	}
}

// awaitConn waits, when the store keeps ready connections and none is
// idle, until one is or the last queued call's deadline passes: a batch
// is assembled when it can be sent, so that the members left out are
// those that no longer have time, rather than all of them timing out
// waiting for its connection (see conn.Set.Process).
func (c *coalescer) awaitConn() {
	if c.conns == nil || c.conns.Idle() {
		return
	}
	c.mu.Lock()
	var last time.Time
	for _, w := range c.queue {
		d, ok := w.ctx.Deadline()
		if !ok { // as before: the batch's own call waits
			last = time.Time{}
			break
		}
		if d.After(last) {
			last = d
		}
	}
	c.mu.Unlock()
	if last.IsZero() { // nothing queued, or a call without a deadline
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), last)
	defer cancel()
	c.conns.Await(ctx)
}

// unfit reports why a request with ctx should not join a batch assembled
// at now, when a round trip takes about rtt, or returns nil.
func unfit(ctx context.Context, now time.Time, rtt time.Duration) error {
	if ctx.Err() != nil {
		return ctxError(ctx, false)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil
	}
	left := deadline.Sub(now)
	switch {
	case left <= 0:
		return &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrTimeout, Err: context.DeadlineExceeded}
	case left <= rtt:
		return &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrTimeout,
			Err: fmt.Errorf("budget too short to join a batch: %v left, a round trip takes about %v", left, rtt)}
	}
	return nil
}

// leaveOut completes a queued w with err, unless its caller left.
func leaveOut(w *waiter, err error) {
	if w.state.CompareAndSwap(queued, delivered) {
		w.err = err
		w.done <- struct{}{}
	}
}

// run sends one batch and delivers each member's result.
func (c *coalescer) run(batch []*waiter) {
	if c.sent != nil {
		c.sent(len(batch))
	}
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
	reqs := make([]*request, len(batch))
	for i, w := range batch {
		reqs[i] = &w.req
	}
	var start time.Time
	if !c.shared { // else the ready connections time it (see observe)
		start = c.clock()
	}
	reply, err := c.scripts.send.one(ctx, "redisstore: take", takeCommand(reqs))
	if err != nil {
		return err
	}
	if !c.shared {
		c.observe(c.clock().Sub(start))
	}
	parts, short, err := c.scripts.split(reply, reqs, make([][]any, 0, len(reqs)))
	if err != nil {
		return err
	}
	for i, w := range batch {
		if w.state.CompareAndSwap(sent, delivered) {
			w.err = w.req.decode(parts[i], short)
		}
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

// clock returns the time.
func (c *coalescer) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// estimate returns the estimate of a round trip (0 until one was timed).
func (c *coalescer) estimate() time.Duration { return c.rtt.Get() }

// observe folds a successful call's round trip d into the estimate, unless
// the estimate is the endpoint's (see shared), which times its commands
// itself. With several lanes, a round trip may include waiting behind the
// other lanes' scripts in Redis, so the estimate errs long by a few
// scripts' runs, tens of microseconds each.
func (c *coalescer) observe(d time.Duration) {
	if !c.shared {
		c.rtt.Observe(d)
	}
}
