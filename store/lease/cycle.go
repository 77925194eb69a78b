package lease

import (
	"time"

	"github.com/sluicehq/sluice"
)

// A token bucket whose refills keep finding it dry is saturated: its
// instances want more than it refills. Asking again every time a token
// refills would cost a store call per admitted check (or more, with
// several instances racing for each token), so a saturated key is
// refilled in cycles instead:
//
//   - a key is saturated once satAfter refills in a row (each within two
//     cycles of the one before) found its bucket dry or were refused, and
//     stays so while a refill finds it dry or a check waits for a refill
//     at least once every two cycles. A key that runs dry now and then is
//     decided as before, exactly;
//   - after a refill of a saturated key finds the bucket dry, the
//     instance waits until the bucket has refilled a cycle's tokens (K, or
//     what refills over the lease's TTL when less), counted from what the
//     store said: exactly until then, not a retry every emission interval;
//   - then it asks for up to K and at least a chunk, the cycle's tokens
//     shared among the instances (rounded up). When less than a chunk is
//     there, the store's refusal says exactly when a chunk will be, and
//     the instance waits until then;
//   - with several instances, every refill of a saturated key that leaves
//     less than a chunk in the bucket waits its cycle, even one that found
//     all it asked for (tokens a late instance left there), so no instance
//     takes more than K a cycle from a dry bucket; an instance alone
//     waits only until the bucket holds a chunk again, so it takes a
//     backlog at once and K a call otherwise.
//
// N instances flat out each come about once a cycle and take what refilled
// since the one before: one that comes too soon after another is refused
// and moved by at most a chunk, so they settle a chunk apart and each
// takes about a chunk a cycle: about N / K store calls per admitted check,
// the rate shared evenly. Meanwhile their checks are refused in process,
// each told when this instance refills. Tokens that refill while they wait
// stay in the bucket for the next refill: nothing is lost, and nothing is
// taken that the store did not give, so the drift bound N × K holds.

// satAfter is how many refills in a row must find a token bucket dry (or
// be refused) before its key is saturated.
const satAfter = 4

// cycle is how a token bucket's refill is sized and spaced.
type cycle struct {
	tokens int64 // what the bucket refills over one cycle: K, or what refills over the lease's TTL when less; at least 1
	chunk  int64 // the least a refill of a saturated key asks for: tokens shared among the instances, rounded up
	alone  bool  // one instance: a refill that found all it asked for need not wait a cycle
	sat    bool  // the key was saturated at the claim (see [entry.saturated])
}

// cycle returns the refill cycle of e's token bucket at now when its
// leases take up to kmax tokens and n instances share it; the zero cycle
// for a fixed window, whose count only resets when its window ends (a
// refusal is waited out until then). Called with e.mu held.
func (e *entry) cycle(now, kmax int64, n int) cycle {
	if e.interval == 0 {
		return cycle{}
	}
	n = max(n, 1)
	tokens := max(1, min(kmax, e.ttl/e.interval))
	c := cycle{tokens: tokens, chunk: (tokens + int64(n) - 1) / int64(n), alone: n == 1}
	c.sat = e.saturated(now, tokens)
	return c
}

// saturated reports whether e's token bucket, whose cycle has tokens, is
// saturated at now (see [satAfter]). Called with e.mu held.
func (e *entry) saturated(now, tokens int64) bool {
	return e.satAt > 0 && now-e.satAt < 2*tokens*e.interval
}

// dried notes a refill of e's token bucket, whose cycle has tokens, that
// found it dry or was refused at now. Called with e.mu held.
func (e *entry) dried(now, tokens int64) {
	if e.dryAt > 0 && now-e.dryAt < 2*tokens*e.interval {
		e.dryRun++
	} else {
		e.dryRun = 1
	}
	e.dryAt = now
	if e.dryRun >= satAfter {
		e.satAt = now
	}
}

// least returns the least a refill for a hit of cost c asks for under c:
// c, or at least a chunk when the key is saturated.
func (c cycle) least(cost int64) int64 {
	if c.sat {
		return max(cost, c.chunk)
	}
	return cost
}

// wait notes a refill of e's token bucket whose answer r came at now, and
// which took of the upTo it asked for what r says, and, when the key is
// saturated, sets when the next refill may be sent: a dry refill waits
// until the bucket holds a cycle's tokens again, as of what the store said
// (counted from the answer: later, never sooner, than it does); one that
// found all it asked for, leaving less than a chunk, waits a cycle, or,
// for an instance alone, until the bucket holds a chunk again (no wait
// while it holds one). Until then a hit the lease cannot serve, of up to
// a chunk, is refused in process. Called with e.mu held.
func (e *entry) wait(now int64, r sluice.Result, upTo int64, cyc cycle) {
	if e.interval == 0 || cyc.tokens == 0 {
		return
	}
	dry := r.Receipt.Taken < upTo
	if dry {
		e.dried(now, cyc.tokens)
	}
	if !e.saturated(now, cyc.tokens) {
		return
	}
	fullAt := now + int64(r.ResetAfter/time.Microsecond)
	holds := func(n int64) int64 { return fullAt - (e.limit.Capacity()-n)*e.interval } // when the bucket holds n, others taking nothing
	var until int64
	switch {
	case dry:
		until = holds(cyc.tokens)
	case cyc.alone:
		until = holds(cyc.chunk)
	case r.Remaining >= cyc.chunk:
		return // the bucket holds a chunk more: nothing to wait for
	default:
		until = now + cyc.tokens*e.interval
	}
	if until > now {
		e.deny = denial{cost: cyc.chunk, upTo: true, until: until, remaining: r.Remaining, fullAt: fullAt}
	}
}
