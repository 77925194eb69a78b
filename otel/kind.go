package sluiceotel

import (
	"context"
	"errors"

	"github.com/sluicehq/sluice"
)

// Error types, the values of error.type on the store instruments.
const (
	kindTimeout = iota
	kindUnavailable
	kindClusterDown
	kindBreakerOpen
	kindScriptMissing
	kindCorruptState
	kindClosed
	kindInvalid
	kindCanceled
	kindOther
	numKinds
)

var kindLabels = [numKinds]string{
	"timeout", "unavailable", "cluster_down", "breaker_open", "script_missing",
	"corrupt_state", "closed", "invalid", "canceled", "_OTHER",
}

// kindErrors are the sentinels of the kinds, in the order they are tested.
var kindErrors = [...]struct {
	err  error
	kind int
}{
	{sluice.ErrTimeout, kindTimeout},
	{sluice.ErrUnavailable, kindUnavailable},
	{sluice.ErrClusterDown, kindClusterDown},
	{sluice.ErrBreakerOpen, kindBreakerOpen},
	{sluice.ErrScriptMissing, kindScriptMissing},
	{sluice.ErrCorruptState, kindCorruptState},
	{sluice.ErrClosed, kindClosed},
	{sluice.ErrInvalidHit, kindInvalid},
	{sluice.ErrInvalidLimit, kindInvalid},
	{sluice.ErrInvalidConfig, kindInvalid},
	// A store that does not wrap its context's errors.
	{context.DeadlineExceeded, kindTimeout},
	{context.Canceled, kindCanceled},
}

// ErrorType returns the error.type value the recorder gives a store
// error: "timeout", "unavailable", "cluster_down", "breaker_open",
// "script_missing", "corrupt_state", "closed" for the sentinels of the
// same names (such as [sluice.ErrTimeout]), "invalid" for
// [sluice.ErrInvalidHit], [sluice.ErrInvalidLimit] and
// [sluice.ErrInvalidConfig], "timeout" and "canceled" for a bare
// [context.DeadlineExceeded] or [context.Canceled], and "_OTHER" (the
// semantic conventions' fallback value) for anything else, nil included.
// These are the kind label values of the metrics package, but for
// "_OTHER". It matches with errors.Is and never reads the error's
// message.
func ErrorType(err error) string {
	k, _ := classify(err)
	return kindLabels[k]
}

// classify returns err's kind and whether it is ambiguous (see
// sluice.IsAmbiguous).
func classify(err error) (kind int, ambiguous bool) {
	if err == nil {
		return kindOther, false
	}
	if se, ok := errors.AsType[*sluice.StoreError](err); ok {
		ambiguous = se.Ambiguous
		if se.Kind != nil {
			for _, ke := range kindErrors {
				if errors.Is(se.Kind, ke.err) {
					return ke.kind, ambiguous
				}
			}
		}
	}
	for _, ke := range kindErrors {
		if errors.Is(err, ke.err) {
			return ke.kind, ambiguous
		}
	}
	return kindOther, ambiguous
}
