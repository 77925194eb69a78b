package sluiceotel

import "github.com/sluicehq/sluice/internal/obs"

// kindLabels are the values of error.type on the store instruments, by
// kind: the metrics package's kind labels, but for the semantic
// conventions' fallback value.
var kindLabels = func() [obs.NumKinds]string {
	l := obs.KindNames
	l[obs.KindOther] = "_OTHER"
	return l
}()

// ErrorType returns the error.type value the recorder gives a store
// error: "process_slow" for [sluice.ErrProcessSlow] (a timeout this
// process noticed late), "timeout", "unavailable", "cluster_down", "breaker_open",
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
	k, _ := obs.Classify(err)
	return kindLabels[k]
}
