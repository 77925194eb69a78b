package lease

import (
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/algo"
)

// credit is how a dry token bucket is decided when this process is the
// only instance sharing it (Instances is 1): from the bucket as the
// backing store last described it, refilled at its rate since, less what
// this process admitted since. Alone, that is the bucket itself, so every
// answer is the one the backing store would give, to the microsecond,
// with no call; what it admitted is owed, and taken from the backing store
// (settled) in one forced take once half a lease is owed, when the model
// expires, on Sweep and on Close. So an instance alone flat out on a spent
// key costs one call per K/2 admitted checks, whatever it is offered.
//
// The model lives a lease's TTL from the answer it started from; then
// what it owes is settled and the answer starts it again, or, owing
// nothing, it ends and the next hit asks the backing store. At most K is
// owed (a call waits for a settle in flight rather than owe more), so a
// crash leaves the bucket at most K fuller than it should be, the bound of
// leases; a settle that fails leaves the tokens owed, for the next one. A
// reset through this store drops the model; the instance count changing
// from 1 settles and ends it.
type credit struct {
	anchored int64 // µs: when the backing store last said when the bucket is full; 0: no model
	tat      int64 // µs: the bucket's theoretical arrival time as this process knows it, owed tokens included
	owed     int64 // tokens admitted in process and not taken from the backing store yet
	since    int64 // µs: when the oldest owed token was admitted
}

// modelLive reports whether e's model decides at now: a token bucket's, within
// its TTL of the answer it started from.
func (e *entry) modelLive(now int64) bool {
	return e.credit.anchored > 0 && now < e.credit.anchored+e.ttl
}

// anchor starts e's model from the backing store's answer to a call sent
// at now, whose ResetAfter is resetAfter: the bucket is full again at now
// + resetAfter. Called with e.mu held.
func (e *entry) anchor(now int64, resetAfter time.Duration) {
	c := &e.credit
	tat := now + int64(resetAfter/time.Microsecond) + c.owed*e.interval
	if c.anchored > 0 {
		tat = max(tat, c.tat)
	}
	c.tat, c.anchored = tat, now
}

// settleAmount returns how many of the owed tokens a settle at now takes:
// those the bucket has not refilled yet. A token admitted long enough ago
// is back in the bucket whether or not it was taken, so it is not taken
// late (which would leave the bucket emptier than it is). Called with
// e.mu held.
func (e *entry) settleAmount(now int64) int64 {
	return min(e.credit.owed, max(0, (e.credit.tat-now)/e.interval))
}

// decideByModel decides a hit of cost c on e's model at now, counting the
// held tokens (taken from the backing store, not served yet) as in the
// bucket; if it passes, it consumes them and owes the rest. It returns the
// outcome. Called with e.mu held.
func (e *entry) decideByModel(now, c, held int64) algo.Outcome {
	cr := &e.credit
	o, next := algo.TokenBucket(now, cr.tat-held*e.interval, e.interval, e.limit.Capacity(), c, false)
	if o.Allowed {
		if cr.owed == 0 {
			cr.since = now
		}
		cr.tat = next
		cr.owed += c - held
	}
	return o
}

// uncredit undoes a hit of cost c decided by e's model that took held
// tokens, for a request that was not admitted. Called with e.mu held.
func (e *entry) uncredit(c, held int64) {
	cr := &e.credit
	cr.tat -= c * e.interval
	cr.owed = max(0, cr.owed-(c-held))
	if held > 0 {
		e.left.Add(held)
	}
}

// settled applies the backing store's answer r to a settle of x tokens,
// claimed at now when owed tokens were owed: the owed tokens are paid (x
// of them taken, the rest refilled already) and the model starts from r,
// the tokens admitted while the settle was in flight owed on top. Called
// with e.mu held.
func (e *entry) settled(now, x, owed int64, r sluice.Result) {
	cr := &e.credit
	cr.owed = max(0, cr.owed-owed)
	if cr.owed == 0 {
		cr.since = 0
	}
	if x > 0 {
		e.anchor(now, r.ResetAfter)
	}
}

// endModel ends e's model, which owes nothing. Called with e.mu held.
func (e *entry) endModel() { e.credit = credit{} }

// modelResult writes o, decided by e's model, to out: consumed when taken.
func (e *entry) modelResult(o *algo.Outcome, taken bool, out *sluice.Result) {
	*out = sluice.Result{}
	o.Result(out, e.limit, taken)
}
