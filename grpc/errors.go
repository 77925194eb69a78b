package sluicegrpc

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/decide"
	"google.golang.org/grpc/status"
)

// ErrWaitTooLong reports a server asking for a wait longer than the client
// interceptor's maximum (see [WithMaxWait]). It arrives inside a
// [*RefusedError].
var ErrWaitTooLong = errors.New("sluicegrpc: server asks for a wait beyond the maximum")

// invalidConfig returns the error of an argument or option a constructor
// refuses, which wraps [sluice.ErrInvalidConfig].
func invalidConfig(format string, args ...any) error {
	return &decide.ConfigError{Package: "sluicegrpc", Msg: fmt.Sprintf(format, args...)}
}

// RefusedError reports a call the server refused with a retry delay
// ([RetryDelay]) that the client interceptor did not send again, because
// the wait would exceed its maximum ([ErrWaitTooLong]) or outlast the
// call's context (an error wrapping [context.DeadlineExceeded]).
//
// It carries the server's status: status.Code, status.FromError and
// status.Convert see the server's code (ResourceExhausted or Unavailable),
// so code that switches on the code needs no change.
type RefusedError struct {
	// Status is the status the server answered the last attempt with.
	Status *status.Status
	// Wait is the wait the server asked for (plus jitter).
	Wait time.Duration
	// Attempts is how many times the call was sent.
	Attempts int
	// Err says why the interceptor did not wait.
	Err error
}

// Error describes the refusal.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("sluicegrpc: %v after %d attempts, not retried (wait %v): %v", e.Status.Code(), e.Attempts, e.Wait, e.Err)
}

// Unwrap returns the reason and the server's status as an error.
func (e *RefusedError) Unwrap() []error { return []error{e.Err, e.Status.Err()} }

// GRPCStatus returns the server's status, so that [status.FromError] and
// [status.Code] report the server's code.
func (e *RefusedError) GRPCStatus() *status.Status { return e.Status }
