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
func (s *Store) takeToken(now int64, h *sluice.Hit, v tbNums, out *sluice.Result) {
	create := h.Cost != 0 || h.Force // a peek at a bucket never used stores nothing
	for again := false; ; again = true {
		b := s.table.tokenBucket(h, create, again)
		if b == nil {
			o, _ := algo.TokenBucket(now, 0, v.interval, v.capacity, h.Cost, h.Force)
			o.Result(out, h.Limit, false)
			return
		}
		if b.decideToken(now, h, v, out) {
			return
		}
		b.mu.Lock() // dead: wait for the sweeper to finish with it
		b.mu.Unlock()
	}
}

// decideToken decides h on b, writing the result into out, without taking
// b's lock unless a call deciding several hits holds it. It returns false,
// having decided nothing, when the sweeper forgot b.
func (b *bucket) decideToken(now int64, h *sluice.Hit, v tbNums, out *sluice.Result) bool {
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
		if !h.Force {
			// The common case, a hit that passes, in a few instructions.
			if next, ok := algo.TokenBucketAdmits(now, tat, v.interval, v.capacity, v.tau, h.Cost); ok {
				if next == tat || b.tat.CompareAndSwap(tat, next) {
					algo.AdmittedResult(out, h.Limit, now, next, v.interval, v.tau)
					return true
				}
				continue
			}
		}
		o, next := algo.TokenBucket(now, tat, v.interval, v.capacity, h.Cost, h.Force)
		taken := o.Allowed || h.Force
		if !taken || next == tat || b.tat.CompareAndSwap(tat, next) {
			o.Result(out, h.Limit, taken)
			return true
		}
	}
}

// freeze moves a token bucket's arrival time into st, for a caller that
// holds b's lock and decides several hits; thaw publishes st's again.
func (b *bucket) freeze() {
	if b.tb {
		tat := b.tat.Swap(tatFrozen)
		b.st.a, b.st.expires = tat, tat
	}
}

func (b *bucket) thaw() {
	if b.tb {
		b.tat.Store(b.st.a)
	}
}

// full reports whether b is indistinguishable from a bucket never used at
// now, and for a token bucket marks it dead if so. The caller holds b's lock.
func (b *bucket) full(now int64) bool {
	if !b.tb {
		return b.st.expires <= now
	}
	tat := b.tat.Load()
	return tat <= now && b.tat.CompareAndSwap(tat, tatDead)
}
