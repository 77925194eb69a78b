package algo

import (
	"time"

	"github.com/sluicehq/sluice"
)

// Result turns o into the public result for a hit with limit l; taken
// reports whether the hit consumed (it passed and the request was admitted).
func (o *Outcome) Result(l sluice.Limit, taken bool) sluice.Result {
	r := sluice.Result{
		Allowed:       o.Allowed,
		Limit:         l,
		RetryAfter:    Micros(o.RetryAfter),
		Unsatisfiable: o.Unsatisfiable,
	}
	if taken {
		r.Remaining = o.RemainingIf()
		r.ResetAfter = Micros(o.ResetAfterIf)
	} else {
		r.Remaining = o.Remaining()
		r.ResetAfter = Micros(o.ResetAfter)
	}
	return r
}

// Micros converts microseconds to a Duration.
func Micros(us int64) time.Duration { return time.Duration(us) * time.Microsecond }
