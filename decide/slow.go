package decide

import (
	"context"
	"errors"
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
// that returned at end, marked as the process's ([sluice.ErrProcessSlow])
// when it is a timeout noticed more than late after the call's deadline:
// the goroutine was not run in time, so whatever the store answered was
// read too late. A partial failure is left as it is: its decided hits
// stand.
func processSlow(err error, call context.Context, end time.Time, late time.Duration) error {
	deadline, ok := call.Deadline()
	if !ok || end.Sub(deadline) <= late {
		return err
	}
	if _, partial := errors.AsType[*sluice.PartialError](err); partial {
		return err
	}
	se, ok := errors.AsType[*sluice.StoreError](err)
	if !ok || !errors.Is(se.Kind, sluice.ErrTimeout) {
		if !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
	}
	slow := &sluice.StoreError{Op: "decide: store call", Kind: sluice.ErrProcessSlow, Err: err}
	if ok {
		slow.Ambiguous, slow.RetryAfter = se.Ambiguous, se.RetryAfter
	}
	return slow
}
