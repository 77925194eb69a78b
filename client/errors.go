package client

import (
	"errors"
	"fmt"
	"time"
)

// ErrInvalidConfig reports an option [New] cannot work with, such as a
// negative maximum wait. Test for it with [errors.Is].
var ErrInvalidConfig = errors.New("client: invalid configuration")

// Errors of the transport. Test for them with [errors.Is]; they arrive
// inside a [*RefusedError].
var (
	// ErrMalformed reports a Retry-After field that is neither delay
	// seconds nor an HTTP-date.
	ErrMalformed = errors.New("client: malformed rate-limit field")
	// ErrWaitTooLong reports a server asking for a wait longer than the
	// transport's maximum.
	ErrWaitTooLong = errors.New("client: server asks for a wait beyond the maximum")
)

type fieldError struct{ field string }

func (e *fieldError) Error() string { return "client: malformed " + e.field + " field" }

func (e *fieldError) Unwrap() error { return ErrMalformed }

// RefusedError reports a request the server refused (429 or 503) that the
// transport did not send again, because the wait asked for was malformed
// ([ErrMalformed]), longer than the maximum ([ErrWaitTooLong]), or would
// outlast the request's context (its error). The response's body has
// been read and closed.
type RefusedError struct {
	// StatusCode is the refusing response's status.
	StatusCode int
	// Wait is the wait the server asked for, when it could be read.
	Wait time.Duration
	// Attempts is how many times the request was sent.
	Attempts int
	// Err says why the transport did not wait.
	Err error
}

// Error describes the refusal.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("client: %d after %d attempts, not retried (wait %v): %v", e.StatusCode, e.Attempts, e.Wait, e.Err)
}

// Unwrap returns the reason.
func (e *RefusedError) Unwrap() error { return e.Err }
