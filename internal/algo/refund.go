package algo

// Refunds give back what one take consumed, exactly: never more than the
// take still holds in the bucket. A bucket that has refilled past the take
// (its tokens came back anyway, its window passed) gives back only what is
// left of it, or nothing.

// RefundTokenBucket gives back units of a take that left the arrival time at
// mark, from a bucket whose arrival time is tat, at now. The take still holds
// mark − now µs of the bucket (what has not refilled yet), so at most that
// much is subtracted, and never below now: the bucket ends no fuller than if
// the take had been smaller by units. It returns the arrival time to store
// and whether it changed.
func RefundTokenBucket(now, tat, mark, units, interval int64) (next int64, changed bool) {
	if tat <= now {
		return tat, false // full: the take has refilled
	}
	sub := min(units*interval, mark-now)
	if sub <= 0 {
		return tat, false
	}
	return max(tat-sub, now), true
}

// RefundFixedWindow gives back units of a take made in window mark from a
// fixed window stored as index holding count. A take of an earlier window
// left nothing to give back.
func RefundFixedWindow(index, count, mark, units int64) (nextCount int64, changed bool) {
	if index != mark || count <= 0 {
		return count, false
	}
	return count - min(units, count), true
}

// RefundSlidingWindow gives back units of a take made in window mark from a
// sliding window counter stored as index with counts cur and prev: from cur
// while the take's window is the stored one, from prev once the stored
// window is the next.
func RefundSlidingWindow(index, cur, prev, mark, units int64) (nextCur, nextPrev int64, changed bool) {
	switch {
	case index == mark && cur > 0:
		return cur - min(units, cur), prev, true
	case index == mark+1 && prev > 0:
		return cur, prev - min(units, prev), true
	}
	return cur, prev, false
}

// RefundSlidingLog gives back units of the entry with time ts and sequence
// number seq from log: the entry's cost shrinks by units, and it leaves the
// log when nothing is left of it. An entry no longer in log (it left the
// window) gives back nothing.
func RefundSlidingLog(log []Entry, ts, seq, units int64) ([]Entry, bool) {
	for i := range log {
		if e := &log[i]; e.TS == ts && e.Seq == seq {
			if e.Cost > units {
				e.Cost -= units
				return log, true
			}
			return append(log[:i], log[i+1:]...), true
		}
	}
	return log, false
}

// PartialCost returns what a partial hit takes: as much as is left, up to
// units, given the outcome o of deciding its minimum cost without consuming.
// It is 0 when the minimum did not pass.
func PartialCost(o *Outcome, units int64) int64 {
	if !o.Allowed {
		return 0
	}
	return min(units, o.Remaining())
}
