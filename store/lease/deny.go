package lease

import (
	"time"

	"github.com/sluicehq/sluice"
)

// denial remembers when the next refill of a dry lease may be sent: a
// refusal by the backing store, or the wait of a dry lease for a cycle's
// tokens. Until then a refill that would ask for at least cost tokens (a
// fixed window's: cost or more) is refused in process, so a key far over
// its limit costs no store call per request. Immutable once published.
type denial struct {
	cost, until, remaining, fullAt int64
	upTo                           bool // a dry lease's wait for its cycle: every cost up to cost waits for it
}

// refuses reports whether d refuses at now a refill that would ask for at
// least least tokens: one asking for what the backing store refused (or
// the lease waits for) until then; for a fixed window, whose count only
// grows until the window ends, also one asking for more.
func (d *denial) refuses(now, least int64, window bool) bool {
	return d != nil && now < d.until && (least == d.cost || window && least > d.cost)
}

// refusesCost reports whether d refuses a hit of cost c at now, as
// [denial.refuses] would refuse the refill such a hit would claim.
func (d *denial) refusesCost(now, c int64, window bool) bool {
	return d.refuses(now, c, window) || d.upTo && now < d.until && c <= d.cost
}

// denyUntil returns until when e's denial stands (0: none).
func (e *entry) denyUntil() int64 {
	if d := e.deny.Load(); d != nil {
		return d.until
	}
	return 0
}

// denied returns the result of a hit refused by e's denial d at now.
func (e *entry) denied(now int64, d *denial) sluice.Result {
	return sluice.Result{Limit: e.limit, Remaining: d.remaining, RetryAfter: time.Duration(d.until-now) * time.Microsecond,
		ResetAfter: time.Duration(max(0, d.fullAt-now)) * time.Microsecond}
}

// refuseServe answers a hit of cost c that e's lease cannot serve from
// e's standing denial, with no lock and no allocation: when the denial
// refuses c at now, it writes the refusal to out, as a refill's claim
// would find it (see [plan.claim]), and reports true. A cost beyond the
// capacity is left to the general path: it is unsatisfiable.
func (e *entry) refuseServe(now, c int64, out *sluice.Result) bool {
	d := e.deny.Load()
	if d == nil || c > e.limit.Capacity() || !d.refusesCost(now, c, e.interval == 0) {
		return false
	}
	*out = e.denied(now, d)
	return true
}
