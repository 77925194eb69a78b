package sluice

import (
	"errors"
	"strings"
	"time"
)

// Errors a [Store] or a configuration step may return. Test for them with
// [errors.Is]; store failures arrive wrapped in a [*StoreError].
var (
	// ErrInvalidLimit reports a Limit that cannot be enforced: see
	// [Limit.Validate].
	ErrInvalidLimit = errors.New("sluice: invalid limit")
	// ErrInvalidConfig reports a constructor given an argument or option
	// it cannot work with, such as a nil store.
	ErrInvalidConfig = errors.New("sluice: invalid configuration")
	// ErrInvalidHit reports a Hit a store cannot decide: a negative cost,
	// an unknown algorithm, an empty key, or too few result slots.
	ErrInvalidHit = errors.New("sluice: invalid hit")
	// ErrUnavailable reports that the store could not be reached: refused
	// connections, resets, an exhausted connection pool.
	ErrUnavailable = errors.New("sluice: store unavailable")
	// ErrTimeout reports that the store did not answer within the latency
	// budget (the context's deadline).
	ErrTimeout = errors.New("sluice: store timeout")
	// ErrProcessSlow reports a store call that missed its latency budget
	// because this process, not the store, was slow: the caller noticed
	// the deadline well after it had passed (starved of CPU, it was not
	// run in time; an answer that arrived in time is then read too late).
	// It comes with ErrTimeout: errors.Is matches both.
	ErrProcessSlow = errors.New("sluice: process too slow")
	// ErrClusterDown reports a Redis Cluster that is failing over.
	ErrClusterDown = errors.New("sluice: cluster down")
	// ErrBreakerOpen reports that the store's circuit breaker refused the
	// call without trying it.
	ErrBreakerOpen = errors.New("sluice: circuit breaker open")
	// ErrScriptMissing reports a Lua script the server lost and the store
	// could not reload.
	ErrScriptMissing = errors.New("sluice: script missing")
	// ErrCorruptState reports stored state that the store cannot read, such
	// as a Redis key of the wrong type. Nothing was written.
	ErrCorruptState = errors.New("sluice: corrupt stored state")
	// ErrClosed reports a call on a closed store.
	ErrClosed = errors.New("sluice: store closed")
)

// StoreError is the error a store returns when it could not decide. Kind is
// one of the sentinel errors above; Err is the underlying cause, if any.
//
// Ambiguous is true when the store cannot know whether the decision was
// applied: the command may have reached the server and run (a timeout or a
// connection reset after the request was sent). An ambiguous failure must
// never be retried blindly: a retry may consume twice.
type StoreError struct {
	Op        string // what failed, prefixed with the package, e.g. "redisstore: take"
	Kind      error  // a sentinel such as ErrTimeout
	Ambiguous bool   // the operation may have been applied
	Err       error  // the underlying cause; may be nil
	// RetryAfter, when positive, is how long the store expects to stay
	// unavailable: the remaining open time of a circuit breaker. Fail-closed
	// responses use it for their Retry-After.
	RetryAfter time.Duration
}

// Error describes the failure, for logs. Never show it to clients.
func (e *StoreError) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Kind != nil {
		b.WriteString(": ")
		b.WriteString(strings.TrimPrefix(e.Kind.Error(), "sluice: "))
	}
	if e.Ambiguous {
		b.WriteString(" (outcome ambiguous)")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns Kind and Err, so errors.Is matches either.
func (e *StoreError) Unwrap() []error {
	errs := make([]error, 0, 2)
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// IsAmbiguous reports whether err, or an error it wraps, is a [*StoreError]
// whose operation may have been applied.
func IsAmbiguous(err error) bool {
	var se *StoreError
	return errors.As(err, &se) && se.Ambiguous
}
