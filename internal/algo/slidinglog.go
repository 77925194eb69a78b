package algo

// Entry is one admitted request in a sliding log: its time, its cost, and
// a sequence number that makes it unique even within one microsecond.
type Entry struct {
	TS, Cost, Seq int64
}

// SlidingLog decides a hit of cost on a sliding window log: the request
// passes when the costs logged in the last period µs, plus cost, stay
// within limit. log holds the entries in ascending TS order; entries at or
// before now−period are ignored (the caller prunes them). It returns the
// outcome and, when the hit consumes, the entry to add (add is false for a
// peek, or a forced charge that finds the log already at twice the limit).
func SlidingLog(now int64, log []Entry, period, limit, cost int64, force bool) (o Outcome, e Entry, add bool) {
	var sum, newest, seq int64
	start := firstLive(log, now, period)
	for _, x := range log[start:] {
		sum += x.Cost
		newest = max(newest, x.TS)
		seq = max(seq, x.Seq+1)
	}
	o.Interval = 1
	o.Slack = limit - sum
	if start < len(log) {
		o.ResetAfter = newest + period - now
	}
	switch {
	case cost > limit:
		o.Unsatisfiable = true
	case sum+cost > limit:
		need := sum + cost - limit
		for _, x := range log[start:] {
			if need -= x.Cost; need <= 0 {
				o.RetryAfter = x.TS + period - now
				break
			}
		}
	default:
		o.Allowed = true
	}
	if !o.Allowed && !force {
		return o, e, false
	}
	if force {
		cost = min(cost, 2*limit-sum)
	}
	o.SlackIf = limit - sum - max(cost, 0)
	o.ResetAfterIf = o.ResetAfter
	if cost <= 0 {
		return o, e, false
	}
	o.ResetAfterIf = max(newest, now) + period - now
	return o, Entry{TS: now, Cost: cost, Seq: seq}, true
}

// firstLive returns the index of the first entry still inside the window:
// TS > now − period.
func firstLive(log []Entry, now, period int64) int {
	i := 0
	for i < len(log) && log[i].TS <= now-period {
		i++
	}
	return i
}

// Prune returns log without the entries at or before now−period.
func Prune(log []Entry, now, period int64) []Entry {
	i := firstLive(log, now, period)
	if i == 0 {
		return log
	}
	n := copy(log, log[i:])
	return log[:n]
}

// Insert adds e to log, keeping ascending TS order (a clock that went back
// can make e older than the newest entry).
func Insert(log []Entry, e Entry) []Entry {
	i := len(log)
	for i > 0 && log[i-1].TS > e.TS {
		i--
	}
	log = append(log, Entry{})
	copy(log[i+1:], log[i:])
	log[i] = e
	return log
}
