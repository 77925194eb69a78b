package obs

import (
	"context"
	"errors"

	"github.com/sluicehq/sluice"
)

// The kinds of store errors, the values of the metrics' kind labels.
const (
	KindProcessSlow = iota
	KindTimeout
	KindUnavailable
	KindClusterDown
	KindBreakerOpen
	KindScriptMissing
	KindCorruptState
	KindClosed
	KindInvalid
	KindCanceled
	KindOther
	NumKinds
)

// KindNames are the kinds' label values, indexed by kind.
var KindNames = [NumKinds]string{
	"process_slow", "timeout", "unavailable", "cluster_down", "breaker_open", "script_missing",
	"corrupt_state", "closed", "invalid", "canceled", "other",
}

// kindErrors are the sentinels of the kinds, in the order they are tested.
var kindErrors = [...]struct {
	err  error
	kind int
}{
	{sluice.ErrProcessSlow, KindProcessSlow}, // before ErrTimeout, which it comes with
	{sluice.ErrTimeout, KindTimeout},
	{sluice.ErrUnavailable, KindUnavailable},
	{sluice.ErrClusterDown, KindClusterDown},
	{sluice.ErrBreakerOpen, KindBreakerOpen},
	{sluice.ErrScriptMissing, KindScriptMissing},
	{sluice.ErrCorruptState, KindCorruptState},
	{sluice.ErrClosed, KindClosed},
	{sluice.ErrInvalidHit, KindInvalid},
	{sluice.ErrInvalidLimit, KindInvalid},
	{sluice.ErrInvalidConfig, KindInvalid},
	// A store that does not wrap its context's errors.
	{context.DeadlineExceeded, KindTimeout},
	{context.Canceled, KindCanceled},
}

// Classify returns err's kind and whether it is ambiguous (see
// sluice.IsAmbiguous); nil is KindOther. It matches with errors.Is, never
// reads the error's message, and does not allocate.
func Classify(err error) (kind int, ambiguous bool) {
	if err == nil {
		return KindOther, false
	}
	// The first *StoreError decides, as it does for sluice.IsAmbiguous.
	// Testing its Kind alone spares errors.Is a walk of the whole tree
	// (StoreError.Unwrap allocates).
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
	return KindOther, ambiguous
}
