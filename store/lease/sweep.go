package lease

import (
	"sync/atomic"

	"github.com/sluicehq/sluice"
)

// sweep ends e's lease when it has expired, or whatever its state when
// all (Close): its receipts can no longer be refunded into the next one,
// and the tokens it held go back by refunds appended to refunds (when
// giveBack, the backing store takes refunds) or are lost. It returns the
// refunds, the tokens lost, and whether e holds nothing worth keeping
// any more, to be forgotten. A sweep that is not all passes over a busy
// entry: a refill or a return is under way.
func (e *entry) sweep(now int64, all, giveBack bool, refunds []sluice.Refund) (_ []sluice.Refund, lost int64, forget bool) {
	if all {
		e.mu.Lock() // closing: every lease goes back
	} else if !e.mu.TryLock() {
		return refunds, 0, false
	}
	defer e.mu.Unlock()
	if e.refilling != nil && !all {
		return refunds, 0, false
	}
	exp := e.expires.Load()
	if !all && e.live(now) {
		return refunds, 0, false
	}
	e.epoch = e.gen.Load() + 1
	if n := e.left.Swap(0); n > 0 {
		e.expires.Store(min(exp, now))
		lost = n
		switch {
		case !giveBack:
		case e.interval == 0 && now >= e.windowEnd():
			// The window the tokens belong to has passed.
		default:
			refunds, lost = e.returns(refunds, n)
		}
		return refunds, lost, false
	}
	// Nothing held: forget it once its lease and any denial are a TTL in
	// the past (its lease size starts small again), and its model owes
	// nothing.
	return refunds, 0, all || now >= exp+e.ttl && now >= e.denyUntil() && e.credit.owed == 0
}

// refund gives back into e's lease up to units of what a hit served from
// a lease took (its local receipt rc), when that lease may still take
// them, and returns the units lost to the refund: all of them when the
// lease went back or expired with the tokens.
func (e *entry) refund(now int64, rc sluice.Receipt, units int64) (lost int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	live := e.refundable(rc.Mark, now)
	if !live && (e.credit.owed == 0 || rc.Mark < e.epoch) {
		return units
	}
	back, lost := e.given.redeem(e.served.Load(), rc, units)
	if back > 0 {
		e.deny.Store(nil)
	}
	// Tokens the model owes go back first: they are not taken yet.
	if d := min(back, e.credit.owed); d > 0 {
		e.credit.owed -= d
		e.credit.tat -= d * e.interval
		back -= d
	}
	if back > 0 && !live {
		return lost + back
	}
	e.left.Add(back)
	return lost
}

// reset drops e's lease without giving its tokens back, and starts a
// generation (the next of gens) in which no earlier receipt can be
// refunded.
func (e *entry) reset(gens *atomic.Int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.left.Store(0)
	e.expires.Store(0)
	e.gen.Store(gens.Add(1))
	e.epoch = e.gen.Load() + 1
	e.deny.Store(nil)
	e.credit = credit{}
	e.takes = [maxTakes]take{}
}

// returns appends to refunds the refunds that give back n held tokens,
// newest refill first, and returns them and what no refill covers.
// Called with e.mu held.
func (e *entry) returns(refunds []sluice.Refund, n int64) ([]sluice.Refund, int64) {
	for i := range e.takes {
		t := &e.takes[i]
		if n == 0 || t.left == 0 {
			continue
		}
		u := min(n, t.left)
		refunds = append(refunds, sluice.Refund{Hit: t.hit, Receipt: t.receipt, Units: u})
		t.left -= u
		n -= u
	}
	return refunds, n
}

// refundable reports whether a local receipt of generation gen may go
// back into e's lease at now: the lease is live and the chain of leases
// since gen is unbroken (no lease of it went back, expired into a new
// window, or was reset). Called with e.mu held.
func (e *entry) refundable(gen, now int64) bool {
	return gen >= e.epoch && gen <= e.gen.Load() && now < e.expires.Load()
}

// idle reports whether e holds nothing worth keeping.
func (e *entry) idle(now int64) bool {
	if e.left.Load() != 0 || now < e.expires.Load() {
		return false
	}
	if !e.mu.TryLock() {
		return false
	}
	defer e.mu.Unlock()
	return e.refilling == nil && now >= e.denyUntil() && e.credit.owed == 0
}
