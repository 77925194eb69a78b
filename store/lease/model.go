package lease

import (
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/algo"
)

// modelLive reports whether e's model decides at now: a token bucket's, within
// its TTL of the answer it started from.
func (e *entry) modelLive(now int64) bool {
	return e.credit.anchored > 0 && now < e.credit.anchored+e.ttl
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

// modelResult writes o, decided by e's model, to out: consumed when taken.
func (e *entry) modelResult(o *algo.Outcome, taken bool, out *sluice.Result) {
	*out = sluice.Result{}
	o.Result(out, e.limit, taken)
}
