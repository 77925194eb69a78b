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
// counted at the wrong times, so both pass through unleased. So do
// calendar limits: their periods end on the backing store's clock, which a
// lease's end on this process's clock would not match exactly.
func MaxLease(l sluice.Limit, alg sluice.Algorithm, instances int, budget float64) int64 {
	if alg != sluice.TokenBucket && alg != sluice.FixedWindow || l.Calendar != sluice.NoCalendar || instances < 1 || l.Rate < 1 || l.Period <= 0 {
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
// the last lease ran out within half its TTL (a busy key), halves when the
// last lease expired with tokens unused (a quiet one) or when the last
// refill found less than it asked for (the bucket is dry: the instances
// share what refills, so each asks for less), and stays within [1, kmax].
// A key seen once takes only its cost: it holds nothing. A saturated
// token bucket's refills ask for kmax instead (see [cycle]).
func nextK(k, kmax int64, ranOutFast, expiredUnused, dry bool) int64 {
	switch {
	case expiredUnused || dry:
		k /= 2
	case ranOutFast:
		k *= 2
	}
	return min(kmax, max(1, k))
}
