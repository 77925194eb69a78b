package memstore

import (
	"math"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/algo"
)

// A token bucket's state is one number, its arrival time, which a
// single-hit decision changes with a compare-and-swap: the most common call
// takes no lock, and callers on a hot key never wait behind each other's
// arithmetic. Calls that must decide several hits at once hold the bucket's
// lock and freeze the arrival time (frozen) while they decide; a single-hit
// decision that finds it frozen waits for that lock. The sweeper, also under
// the lock, swaps a full bucket's arrival time for dead, so a decision
// racing with it either lands first (and the bucket is kept) or finds it
// dead and looks the key up again.
const (
	tatFrozen = math.MinInt64     // a caller holding the lock decides on it
	tatDead   = math.MinInt64 + 1 // swept: look the key up again
)

// takeToken decides a single token-bucket hit with the limit's numbers v.
// The common case, an unforced hit that passes on a bucket that exists
// under a short key, is decided here in a few instructions with one
// compare-and-swap; decideToken handles every other.
func (s *Store) takeToken(now int64, h *sluice.Hit, v algo.TBNums, out *sluice.Result) {
	if !h.Force && !h.Peek && h.MinCost == 0 && len(h.Key) <= maxKeyLen {
		if b := s.table.tb.find(h.Key); b != nil {
			// A frozen or dead bucket's tat is below any time; the hit is
			// then not admitted here.
			tat := b.tat.Load()
			cost := h.Units()
			if next, ok := algo.TokenBucketAdmits(now, tat, cost, v); ok && tat > tatDead &&
				(next == tat || b.tat.CompareAndSwap(tat, next)) {
				algo.AdmittedResult(out, h.Limit, now, tat, next, cost, v)
				return
			}
		}
	}
	for again := false; ; again = true {
		b := s.table.tokenBucket(h, !h.Peek, again) // a peek at a bucket never used stores nothing
		if b == nil {
			o, _ := algo.TokenBucket(now, 0, v.Interval, v.Capacity, h.Units(), false)
			o.Result(out, h.Limit, false)
			return
		}
		if b.decideToken(now, h, v, out) {
			return
		}
		// dead: wait for the sweeper to finish with it.
		b.mu.Lock()
		//lint:ignore SA2001 the empty critical section is the barrier: it returns once the sweeper lets go of b
		b.mu.Unlock()
	}
}

// decideToken decides h on b, writing the result into out, without taking
// b's lock unless a call deciding several hits holds it. It returns false,
// having decided nothing, when the sweeper forgot b.
func (b *bucket) decideToken(now int64, h *sluice.Hit, v algo.TBNums, out *sluice.Result) bool {
	for {
		tat := b.tat.Load()
		switch tat {
		case tatDead:
			return false
		case tatFrozen:
			// Wait for the caller that froze it, then decide holding the
			// lock, so that no other such caller freezes it again first.
			b.mu.Lock()
			ok := b.decideToken(now, h, v, out)
			b.mu.Unlock()
			return ok
		}
		cost := h.Units()
		if h.MinCost > 0 {
			o, _ := algo.TokenBucket(now, tat, v.Interval, v.Capacity, h.MinCost, false)
			if !o.Allowed {
				o.Result(out, h.Limit, false)
				return true
			}
			cost = algo.PartialCost(&o, cost)
		}
		o, next := algo.TokenBucket(now, tat, v.Interval, v.Capacity, cost, h.Force)
		taken := consumes(h, &o)
		if !taken || next == tat || b.tat.CompareAndSwap(tat, next) {
			o.Result(out, h.Limit, taken)
			setReceipt(out, h, taken, sluice.Receipt{Taken: cost, Mark: next})
			return true
		}
	}
}

// freeze moves a token bucket's arrival time into held, for a caller that
// holds b's lock and decides several hits; thaw publishes held again.
func (b *bucket) freeze() {
	if b.win == nil {
		b.held = b.tat.Swap(tatFrozen)
	}
}

func (b *bucket) thaw() {
	if b.win == nil {
		b.tat.Store(b.held)
	}
}

// full reports whether b is indistinguishable from a bucket never used at
// now, and for a token bucket marks it dead if so. The caller holds b's lock.
func (b *bucket) full(now int64) bool {
	if b.win != nil {
		return b.win.expires <= now
	}
	tat := b.tat.Load()
	return tat <= now && b.tat.CompareAndSwap(tat, tatDead)
}
