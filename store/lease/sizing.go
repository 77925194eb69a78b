package lease

import (
	"math"
	"time"

	"github.com/sluicehq/sluice"
)

// minLeaseForLeasing is the least K worth a lease: a bound below it
// leaves the bucket unleased.
const minLeaseForLeasing = 2

// MaxLease returns the largest K a lease of a bucket with limit l may take
// when instances processes share it, within the drift budget (a share of
// burst + 60 s × rate, such as 0.05), or 0 when the bucket cannot be
// leased (the bound is below 2, or the algorithm is not leased):
//
//	K ≤ capacity / instances
//	instances × K ≤ budget × (capacity + 60 s × rate)
//
// So with N instances the tokens held in leases, which is what the
// instances together can admit beyond the limit in any window, stay within
// N × K. Example: 4 instances at 100/s with a burst of 100 and a 5 %
// budget: K ≤ min(100/4, 0.05 × 6100 / 4) = 25.
//
// Only token bucket and fixed window are leased. A lease is a count of
// tokens taken now and spent later, which both algorithms can hand out
// without changing what they admit beyond the bound: a token bucket's
// tokens do not age, and a fixed window's count is per window (a lease
// ends with its window). The sliding window counter weights the previous
// window's count by time and the sliding log records when each request
// passed: tokens taken in bulk at one instant and spent later would be
// counted at the wrong times, so both pass through unleased.
func MaxLease(l sluice.Limit, alg sluice.Algorithm, instances int, budget float64) int64 {
	if alg != sluice.TokenBucket && alg != sluice.FixedWindow || instances < 1 || l.Rate < 1 || l.Period <= 0 {
		return 0
	}
	capacity := l.Capacity()
	if alg == sluice.FixedWindow {
		capacity = l.Rate
	}
	k := capacity / int64(instances)
	perMinute := float64(l.Rate) * float64(time.Minute) / float64(l.Period)
	drift := budget * (float64(capacity) + perMinute) / float64(instances)
	if drift < float64(k) {
		k = int64(math.Floor(drift))
	}
	if k < minLeaseForLeasing {
		return 0
	}
	return k
}

// nextK adapts a key's lease size to how fast it is used: it doubles when
// the last lease ran out within half its TTL (a busy key) and halves when
// the last lease expired with tokens unused (a quiet one), within
// [1, kmax]. A key seen once takes only its cost: it holds nothing. A dry
// key's refills are sized by its cycle instead (see [entry.cycle]).
func nextK(k, kmax int64, ranOutFast, expiredUnused bool) int64 {
	switch {
	case expiredUnused:
		k /= 2
	case ranOutFast:
		k *= 2
	}
	return min(kmax, max(1, k))
}

// cycle is how a dry key is refilled: every instance that needs it asks
// for up to K tokens, at least chunk, once the bucket has had the time to
// refill tokens.
type cycle struct {
	tokens int64 // what the bucket refills over one cycle: K, or what refills over the lease's TTL when less
	chunk  int64 // the least one refill takes: a share of tokens for each instance, rounded up
	alone  bool  // one instance: a dry token bucket is decided by its model instead (see credit)
	sat    bool  // the claim's key is saturated (see [entry.saturated]): its refill waits a cycle after it
}

// cycle returns the refill cycle of e's bucket at now when its leases
// take up to kmax tokens and n instances share it.
//
// Once a refill finds the bucket dry, an instance waits until the bucket
// has refilled the cycle's tokens before it asks again, and then takes
// what is there, up to K, provided that is at least a chunk; a refusal
// (less than a chunk is there) is waited out in process until a chunk is.
// An instance alone so takes K a cycle, its whole rate, in one call. N
// instances flat out each come once a cycle and take what refilled since
// the one before: a refusal moves an instance that came too soon after
// another by at most a chunk, so they settle a chunk apart and each takes
// a chunk a cycle. That is about N / K calls per admitted token, and the
// instances share the rate evenly, however many checks they are offered.
// Every refill of a saturated key waits its cycle, even one that found all
// it asked for (the tokens a late instance left in the bucket): so no
// instance takes more than K a cycle, and one whose checks came late
// finds its tokens still there.
// Tokens left in the bucket while instances wait are not lost: the next
// refill takes them, so the instances together admit the rate.
func (e *entry) cycle(now, kmax int64, n int) cycle {
	switch {
	case e.interval == 0:
		return cycle{tokens: kmax, chunk: 1, alone: n == 1} // a fixed window's count only resets when the window ends
	case n == 1:
		return cycle{tokens: kmax, chunk: 1, alone: true}
	}
	tokens := max(1, min(kmax, e.ttl/e.interval))
	cyc := cycle{tokens: tokens, chunk: (tokens + int64(n) - 1) / int64(n)}
	cyc.sat = e.saturated(now, cyc)
	return cyc
}

// saturated reports whether a refill found e's token bucket dry within
// the last two cycles, or a refill of a dry key took it within them: the
// key takes its lease faster than its bucket refills it.
func (e *entry) saturated(now int64, cyc cycle) bool {
	return e.interval > 0 && e.dryAt > 0 && now-e.dryAt < 2*cyc.tokens*e.interval
}

// least returns the least a refill of e's bucket for a hit of cost c
// asks for: c, or at least a chunk when the token bucket is saturated.
func (e *entry) least(now, c int64, cyc cycle) int64 {
	if cyc.sat {
		return max(c, cyc.chunk)
	}
	return c
}
