package decide

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
)

// minLate is the least lateness that tells a slow process apart.
const minLate = 2 * time.Millisecond

// lateAfter returns how far past its deadline a timed-out call must have
// returned for the lateness to be this process's: a quarter of the budget,
// at least minLate. A store that is slow while the process is not makes
// the call return at its deadline (go-redis puts it on the socket), late
// only by the time to wake a goroutine.
func lateAfter(budget time.Duration) time.Duration { return max(budget/4, minLate) }

// processSlow returns err, the failure of a store call with context call
// that returned at end, marked as the process's ([sluice.ErrProcessSlow]),
// when it is a timeout noticed more than late after the call's deadline:
// the goroutine was not run in time, so whatever the store answered was
// read too late. Otherwise it returns nil: a partial failure, too, is
// left as it is, since its decided hits stand.
func processSlow(err error, call context.Context, end time.Time, late time.Duration) *sluice.StoreError {
	deadline, ok := call.Deadline()
	if !ok || end.Sub(deadline) <= late {
		return nil
	}
	if _, partial := errors.AsType[*sluice.PartialError](err); partial {
		return nil
	}
	se, ok := errors.AsType[*sluice.StoreError](err)
	if !ok || !errors.Is(se.Kind, sluice.ErrTimeout) {
		if !errors.Is(err, context.DeadlineExceeded) {
			return nil
		}
	}
	slow := &sluice.StoreError{Op: "decide: store call", Kind: sluice.ErrProcessSlow, Err: err}
	if ok {
		slow.Ambiguous, slow.RetryAfter = se.Ambiguous, se.RetryAfter
	}
	return slow
}

// starveFor is how long a process that noticed a call late counts as
// starved of CPU after the last time it did.
const starveFor = time.Second

// starvation tells whether this process is starved of CPU: a store call
// came back well after it could have (see lateAfter), so its goroutine
// waited to run. While it is, a request the store answered without I/O
// (refused from its memory of refusals, by TakeLocal or Take, a lease's
// remembered denial included, or by its open breaker) yields
// the processor (runtime.Gosched) once answered: a flood answered in
// process in microseconds never blocks, so without it the goroutines the
// network or a timer woke (a store's answer, a call's deadline, a request
// preempted) wait behind it for whole scheduler time slices, 10 ms each:
// they read answers that arrived in time too late, and answer late.
type starvation struct {
	until atomic.Int64 // nanoseconds since epoch
}

// gosched yields the processor; tests count its calls.
var gosched = runtime.Gosched

// epoch is the origin of starvation's monotonic clock.
var epoch = time.Now()

// check returns err, the error of a store call with context call that
// took latency and returned at end, marked as the process's when it is
// (see processSlow); it notes the process starved when the call was
// noticed late: a timeout late past its deadline, or a call the store
// answered without I/O (from its memory of refusals, or refused by an open
// breaker) that took longer than late. While the process is starved, a
// call answered without I/O then yields.
func (s *starvation) check(err error, out []sluice.Result, call context.Context, latency time.Duration, end time.Time, late time.Duration) error {
	var starved, inProcess bool
	if err == nil {
		inProcess = out[0].Remembered
	} else if slow := processSlow(err, call, end, late); slow != nil {
		err, starved = slow, true
	} else {
		inProcess = errors.Is(err, sluice.ErrBreakerOpen)
	}
	starved = starved || inProcess && latency > late
	if starved {
		s.until.Store(int64(end.Sub(epoch) + starveFor))
	}
	if inProcess && s.active(end) {
		gosched()
	}
	return err
}

// yield yields the processor when the process counts as starved now, for
// a request answered without I/O that check did not see (the store's
// TakeLocal answered it from memory).
func (s *starvation) yield() {
	if until := s.until.Load(); until != 0 && int64(time.Since(epoch)) < until {
		gosched()
	}
}

// active reports whether the process counts as starved at now: it noticed
// a call late less than starveFor before.
func (s *starvation) active(now time.Time) bool { return int64(now.Sub(epoch)) < s.until.Load() }
