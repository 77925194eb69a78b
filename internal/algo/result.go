package algo

import (
	"time"

	"github.com/sluicehq/sluice"
)

// Result writes into r the public result for a hit with limit l; taken
// reports whether the hit consumed (it passed and the request was
// admitted). It writes every field, so r's old contents do not matter.
func (o *Outcome) Result(r *sluice.Result, l sluice.Limit, taken bool) {
	r.Allowed = o.Allowed
	r.Limit = l
	r.RetryAfter = Micros(o.RetryAfter)
	r.Unsatisfiable = o.Unsatisfiable
	r.Receipt = sluice.Receipt{}
	r.Remembered, r.Blocked, r.BlockStarted = false, false, false
	if taken {
		r.Remaining = o.RemainingIf()
		r.ResetAfter = Micros(o.ResetAfterIf)
	} else {
		r.Remaining = o.Remaining()
		r.ResetAfter = Micros(o.ResetAfter)
	}
}

// Micros converts microseconds to a Duration.
func Micros(us int64) time.Duration { return time.Duration(us) * time.Microsecond }
