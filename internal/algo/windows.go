package algo

// Window arithmetic. A window of length period (µs) has index
// floor(now/period); windows are aligned to the Unix epoch, so every store
// and every node agrees on where they start.

// windowIndex returns the index of the window holding now, never below
// stored: when the clock goes backwards (a failover to a node whose clock
// lags) the later window stays current, so nothing is minted.
func windowIndex(now, period, stored int64) (idx, elapsed int64) {
	idx = now / period
	if stored > idx {
		idx = stored
	}
	return idx, max(now-idx*period, 0)
}

// FixedWindow decides a hit of cost on a fixed-window counter whose stored
// window is index (0 for a bucket never used) holding count, for a limit of
// limit per window of period µs. It returns the outcome and the window and
// count to store if the hit consumes. force consumes even over the limit
// (an after-the-fact charge), up to ForceCap(limit, period).
func FixedWindow(now, index, count, period, limit, cost int64, force bool) (o Outcome, nextIndex, nextCount int64) {
	idx, elapsed := windowIndex(now, period, index)
	return window(idx, period-elapsed, index, count, limit, cost, ForceCap(limit, period), force)
}

// window decides a hit of cost on a window counter stored as index
// holding count, the current window being idx, which ends in end µs;
// a consuming hit leaves at most capped in it.
func window(idx, end, index, count, limit, cost, capped int64, force bool) (o Outcome, nextIndex, nextCount int64) {
	if idx != index {
		count = 0
	}
	o.Interval = 1
	o.Slack = limit - count
	o.ResetAfter = 0
	if count > 0 {
		o.ResetAfter = end
	}
	nextIndex, nextCount = idx, count
	switch {
	case cost > limit:
		o.Unsatisfiable = true
	case count+cost > limit:
		o.RetryAfter = end
	default:
		o.Allowed = true
	}
	if o.Allowed || force {
		nextCount = min(count+min(cost, capped), capped) // min first: a huge forced cost cannot overflow
		o.SlackIf = limit - nextCount
		o.ResetAfterIf = 0
		if nextCount > 0 {
			o.ResetAfterIf = end
		}
	}
	return o, nextIndex, nextCount
}

// ForceCap bounds the count a window can hold after forced charges: twice
// the limit, and never more than period (which keeps the packed Redis
// encoding index*(period+1)+count unambiguous).
func ForceCap(limit, period int64) int64 { return min(2*limit, period) }

// PackWindow encodes a fixed window's state as one integer: the Redis
// store keeps it as an int-encoded string, the cheapest value Redis has.
// Every value stays below 2^53 for period ≤ 2^50 µs and times before 2100.
func PackWindow(index, count, period int64) int64 { return index*(period+1) + count }

// UnpackWindow reverses [PackWindow].
func UnpackWindow(v, period int64) (index, count int64) { return v / (period + 1), v % (period + 1) }

// SlidingWindow decides a hit of cost on a sliding window counter: the
// count of the current window plus the previous window's count weighted by
// the part of it still inside the sliding window, rounded up. index is the
// stored window (0 for a bucket never used), cur its count and prev the
// count of the window before it. It returns the outcome and the state to
// store if the hit consumes.
//
// Admission is exact in integers: cur + cost + ceil(prev·(period−elapsed)/
// period) ≤ limit. The products stay below 2^53 for limit·period ≤ 2^51,
// which [sluice.Limit] validation enforces for this algorithm.
func SlidingWindow(now, index, cur, prev, period, limit, cost int64, force bool) (o Outcome, next [3]int64) {
	idx, elapsed := windowIndex(now, period, index)
	switch {
	case idx == index:
	case idx == index+1:
		cur, prev = 0, cur
	default:
		cur, prev = 0, 0
	}
	left := period - elapsed
	weighted := ceilDiv(prev*left, period)
	o.Interval = 1
	o.Slack = limit - cur - weighted
	o.ResetAfter = slidingReset(cur, prev, left, period)
	next = [3]int64{idx, cur, prev}
	switch {
	case cost > limit:
		o.Unsatisfiable = true
	case cur+cost+weighted > limit:
		o.RetryAfter = slidingRetry(cur, prev, elapsed, period, limit, cost)
	default:
		o.Allowed = true
	}
	if o.Allowed || force {
		next[1] = min(cur+min(cost, 2*limit), 2*limit) // min first: a huge forced cost cannot overflow
		o.SlackIf = limit - next[1] - weighted
		o.ResetAfterIf = slidingReset(next[1], prev, left, period)
	}
	return o, next
}

// slidingReset is the time until a sliding window counter is whole again:
// the current count weighs until the end of the next window, the previous
// one until the end of this window.
func slidingReset(cur, prev, left, period int64) int64 {
	switch {
	case cur > 0:
		return left + period
	case prev > 0:
		return left
	}
	return 0
}

// slidingRetry is the time until a denied hit of cost (≤ limit) would pass.
func slidingRetry(cur, prev, elapsed, period, limit, cost int64) int64 {
	if room := limit - cur - cost; room >= 0 {
		// Passes later in this window, once enough of prev has slid out:
		// prev·(period−e) ≤ room·period.
		if e := period - room*period/prev; e < period {
			return e - elapsed
		}
	}
	// In the next window cur becomes the previous count.
	untilNext := period - elapsed
	room := limit - cost
	if cur <= room {
		return untilNext
	}
	return untilNext + period - room*period/cur
}

func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}
