package lease

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
)

// entry is one leased bucket: the tokens this process holds, and what the
// backing store said at the last refill. The fields the local hit path
// reads are atomics; the refill state is guarded by mu.
type entry struct {
	left    atomic.Int64 // tokens held and not yet served
	served  atomic.Int64 // tokens served from leases so far: local receipts name their places in this count
	expires atomic.Int64 // µs: the lease serves while now < expires
	gen     atomic.Int64 // lease generation (from Store.gens): local receipts name it
	base    atomic.Int64 // fixed window: the backing's Remaining at the last refill
	fullAt  atomic.Int64 // µs: when the backing's bucket is full, as of the last refill
	winEnd  atomic.Int64 // fixed window: µs at which the lease's window ends

	limit    sluice.Limit // immutable
	alg      sluice.Algorithm
	interval int64 // token bucket: µs per token; 0 for a fixed window
	policy   *sluice.LeasePolicy

	mu         sync.Mutex
	refilling  chan struct{}  // closed when the refill in flight ends
	takes      [maxTakes]take // the latest refills, newest first: what returns refund
	k          int64          // the lease size the next refill asks for
	refilledAt int64          // µs
	dry        bool           // the last refill found less than it asked for
	dryAt      int64          // token bucket: µs when a refill last found it dry or was refused; 0: never
	dryRun     int64          // token bucket: refills in a row that found it dry (see [entry.dried])
	satAt      int64          // token bucket: µs of the last sign that its key is saturated; 0: never
	ttl        int64          // µs
	deny       denial
	epoch      int64    // the oldest generation whose local receipts may still be refunded
	given      givenLog // which of the latest served tokens local refunds gave back
}

// newEntry returns the entry of h's bucket under pol, whose leases last
// ttl unless pol says.
func newEntry(h *sluice.Hit, pol *sluice.LeasePolicy, ttl time.Duration) *entry {
	e := &entry{limit: h.Limit, alg: h.Algorithm, policy: pol}
	if h.Algorithm == sluice.TokenBucket {
		e.interval = h.Limit.IntervalMicros()
	}
	if pol.TTL > 0 {
		ttl = pol.TTL
	}
	e.ttl = int64(ttl / time.Microsecond)
	return e
}

// live reports whether e's lease may serve now: before it expires. Held
// tokens are served even once the bucket, counting them as back in it,
// would be full again: an exact bucket would have let that refill go, so
// the instance may admit up to what it holds beyond an exact bucket's
// answer. That is the drift Instances × K bounds (see [MaxLease]), and it
// is what lets a key under its limit be served from leases at all.
func (e *entry) live(now int64) bool { return now < e.expires.Load() }

// windowEnd returns when a fixed window lease's window ends.
func (e *entry) windowEnd() int64 { return e.winEnd.Load() }

// serve takes c tokens from e's live lease for a hit, with no lock and no
// allocation, and writes the hit's result to out: served from the lease,
// with a local receipt. It reports false, taking nothing, when the lease
// does not hold c tokens or has expired.
func (e *entry) serve(now, c int64, out *sluice.Result) bool {
	gen := e.gen.Load()
	for {
		l := e.left.Load()
		if l < c || !e.live(now) {
			return false
		}
		if e.left.CompareAndSwap(l, l-c) {
			e.report(now, l-c, out)
			out.Allowed = true
			out.Receipt = localReceipt(c, gen, e.served.Add(c))
			return true
		}
	}
}

// reserve takes c tokens from e's lease if it is live and holds them.
func (e *entry) reserve(c, now int64) bool {
	for {
		l := e.left.Load()
		if l < c || !e.live(now) {
			return false
		}
		if e.left.CompareAndSwap(l, l-c) {
			return true
		}
	}
}

// putBack returns n tokens reserved under generation gen to e's lease
// when they may go back (see [entry.keep]), and returns what the lease
// holds.
func (e *entry) putBack(gen, n int64) int64 {
	if e.keep(gen) {
		return e.left.Add(n)
	}
	return e.left.Load()
}

// report fills r with the lease's view: Remaining is the tokens held plus
// what the backing bucket holds as of the last refill (for a token bucket,
// refilled at its rate since, as a process alone would see it); ResetAfter
// is when that bucket is full again, counting the tokens held as back in
// it.
func (e *entry) report(now, left int64, r *sluice.Result) {
	fullAt := e.fullAt.Load()
	*r = sluice.Result{Limit: e.limit}
	if e.interval > 0 {
		capacity := e.limit.Capacity()
		backing := min(capacity, max(0, capacity+floorDiv(now-fullAt, e.interval)))
		r.Remaining = min(capacity, left+backing)
		r.ResetAfter = time.Duration(max(0, fullAt-now-left*e.interval)) * time.Microsecond
		return
	}
	r.Remaining = min(e.limit.Rate, left+e.base.Load())
	r.ResetAfter = time.Duration(max(0, fullAt-now)) * time.Microsecond
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// withLease is the backing store's answer r for h with the tokens e holds
// counted as in the bucket (e may be nil); a peek that the held tokens
// let pass is allowed.
func (e *entry) withLease(now int64, h *sluice.Hit, r sluice.Result, peek bool) sluice.Result {
	if e == nil || e.limit != h.Limit || e.alg != h.Algorithm {
		return r
	}
	if e.alg == sluice.FixedWindow && now >= e.expires.Load() {
		return r // tokens of a past window, or lost with their lease
	}
	left := e.left.Load()
	if left <= 0 {
		return r
	}
	c := h.Units()
	capacity := h.Limit.Capacity()
	r.Remaining = min(capacity, r.Remaining+left)
	lent := time.Duration(left*e.interval) * time.Microsecond
	if e.interval > 0 {
		r.ResetAfter = max(0, r.ResetAfter-lent)
	} else if r.Remaining == capacity {
		r.ResetAfter = 0
	}
	switch {
	case r.Unsatisfiable:
	case r.Allowed:
	case r.Remaining >= c && peek:
		r.Allowed, r.RetryAfter = true, 0
	case e.interval > 0:
		r.RetryAfter = max(0, r.RetryAfter-lent)
	}
	return r
}

// endRefill ends the refill in flight: the calls waiting for it go on.
// Called with e.mu held.
func (e *entry) endRefill() {
	close(e.refilling)
	e.refilling = nil
}

// record remembers refill t, for give-backs, and starts the lease's
// generation gen. Called with e.mu held.
func (e *entry) record(now int64, t take, gen int64) {
	newWindow := e.interval == 0 && now >= e.windowEnd()
	if newWindow {
		e.takes = [maxTakes]take{} // a new window: the old takes are spent
	}
	e.push(t)
	e.gen.Store(gen)
	if newWindow || e.epoch == 0 {
		e.epoch = gen // receipts of past windows' leases are spent
	}
}

// renew sets e's lease from the backing store's answer r to a refill of
// up to upTo tokens that took extra tokens beyond the hit's cost, sent at
// now and answered at answered, sets when a saturated token bucket's next
// refill may be sent (see [entry.wait]), ends the refill, and returns the
// tokens the lease holds. Called with e.mu held.
func (e *entry) renew(now, answered int64, r sluice.Result, upTo, extra int64, cyc cycle) int64 {
	e.base.Store(r.Remaining)
	e.fullAt.Store(now + int64(r.ResetAfter/time.Microsecond))
	left := e.left.Add(extra)
	exp := now + e.ttl
	if e.alg == sluice.FixedWindow {
		e.winEnd.Store((floorDiv(now, e.limit.PeriodMicros()) + 1) * e.limit.PeriodMicros())
		exp = min(exp, e.winEnd.Load())
	}
	e.expires.Store(exp)
	e.refilledAt = now
	e.dry = r.Receipt.Taken < upTo
	e.deny = denial{}
	e.wait(answered, r, upTo, cyc)
	e.endRefill()
	return left
}

// refused ends a refill in a request that was not admitted, sent at now
// and answered at answered, r being the backing store's answer to it: the
// held tokens reserved under generation gen go back, and a refusal of the
// refill itself, which asked for at least least tokens, is remembered
// until it could pass: for that least, counted from when the call was
// sent; for a saturated key (cyc.sat), for every cost up to it, counted
// from the answer (later, never sooner, than the bucket holds a chunk), so
// that the next refill takes a chunk.
func (e *entry) refused(now, answered, least, held, gen int64, r sluice.Result, cyc cycle) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if held > 0 {
		e.putBack(gen, held)
	}
	if !r.Allowed {
		e.dry = true
		if e.interval > 0 && cyc.tokens > 0 {
			e.dried(now, cyc.tokens)
		}
	}
	if !r.Allowed && r.RetryAfter > 0 {
		from := now
		if cyc.sat {
			from = answered
		}
		e.deny = denial{cost: least, upTo: cyc.sat, until: from + int64(r.RetryAfter/time.Microsecond), remaining: r.Remaining,
			fullAt: from + int64(r.ResetAfter/time.Microsecond)}
	}
	e.endRefill()
}

// denied returns the result at now of a hit refused by d, a denial of
// e's as the hit's claim found it (e.deny may have changed since). Its
// RetryAfter is at least a microsecond: 0 would say it can never pass.
func (e *entry) denied(d *denial, now int64) sluice.Result {
	return sluice.Result{Limit: e.limit, Remaining: d.remaining, RetryAfter: time.Duration(max(1, d.until-now)) * time.Microsecond,
		ResetAfter: time.Duration(max(0, d.fullAt-now)) * time.Microsecond}
}

// clearDenial forgets e's remembered denial: tokens came back.
func (e *entry) clearDenial() {
	e.mu.Lock()
	e.deny = denial{}
	e.mu.Unlock()
}

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
	// the past (its lease size starts small again).
	return refunds, 0, all || now >= exp+e.ttl && now >= e.deny.until
}

// refund gives back into e's lease up to units of what a hit served from
// a lease took (its local receipt rc), when that lease may still take
// them, and returns the units lost to the refund: all of them when the
// lease went back or expired with the tokens.
func (e *entry) refund(now int64, rc sluice.Receipt, units int64) (lost int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.refundable(rc.Mark, now) {
		return units
	}
	back, lost := e.given.redeem(e.served.Load(), rc, units)
	if back > 0 {
		e.left.Add(back)
		e.deny = denial{}
	}
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
	e.deny = denial{}
	e.takes = [maxTakes]take{}
}

// take is one refill as the backing store took it, and how much of it
// may still be given back.
type take struct {
	hit     sluice.Hit
	receipt sluice.Receipt
	left    int64 // Receipt.Taken less what was given back
}

// maxTakes is how many refills an entry remembers. Held tokens come from
// the latest ones (a refill spends what the lease held); a few more cover
// tokens that calls gave back while a refill was in flight. Tokens beyond
// what they cover cannot be returned, and are counted as lost.
const maxTakes = 4

// push records a refill, newest first.
func (e *entry) push(t take) {
	copy(e.takes[1:], e.takes[:maxTakes-1])
	e.takes[0] = t
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

// keep reports whether tokens reserved from e under generation gen may go
// back into its lease: a token bucket's always (tokens do not age); a
// fixed window's only while the lease they came from is the current one.
func (e *entry) keep(gen int64) bool {
	return e.interval > 0 || e.gen.Load() == gen
}

// denial remembers a refusal by the backing store, so the same cost is
// refused in process until it could pass: a hot key far over its limit
// costs no store call per request. It also stands for a saturated key's
// wait for its next refill (see [entry.wait]).
type denial struct {
	cost, until, remaining, fullAt int64
	upTo                           bool // every cost up to cost is refused, not only cost itself
}

// refuses reports whether d refuses a hit of cost c at now.
func (d *denial) refuses(now, c int64) bool {
	return now < d.until && (c == d.cost || d.upTo && c <= d.cost)
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
	return e.refilling == nil && now >= e.deny.until
}
