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
	left    atomic.Int64           // tokens held and not yet served
	served  atomic.Int64           // tokens served from leases so far: local receipts name their places in this count
	expires atomic.Int64           // µs: the lease serves while now < expires
	gen     atomic.Int64           // lease generation (from Store.gens): local receipts name it
	base    atomic.Int64           // fixed window: the backing's Remaining at the last refill
	fullAt  atomic.Int64           // µs: when the backing's bucket is full, as of the last refill
	winEnd  atomic.Int64           // fixed window: µs at which the lease's window ends
	deny    atomic.Pointer[denial] // when the next refill may be sent, or nil; written with mu held
	gone    atomic.Bool            // the table forgot it

	key      string // immutable
	limit    sluice.Limit
	alg      sluice.Algorithm
	group    string // the hits' Group (a function of the key)
	interval int64  // token bucket: µs per token; 0 for a fixed window
	policy   *sluice.LeasePolicy

	mu         sync.Mutex
	refilling  chan struct{}  // closed when the refill in flight ends
	takes      [maxTakes]take // the latest refills, newest first: what returns refund
	k          int64          // the lease size the next refill asks for
	refilledAt int64          // µs
	dryAt      int64          // µs: when the last refill found less than it asked for (sent then); 0 when it found all
	ttl        int64          // µs
	credit     credit         // a dry token bucket's model, when this process is the only instance
	epoch      int64          // the oldest generation whose local receipts may still be refunded
	given      givenLog       // which of the latest served tokens local refunds gave back
}

// newEntry returns the entry of h's bucket under pol, whose leases last
// ttl unless pol says.
func newEntry(h *sluice.Hit, pol *sluice.LeasePolicy, ttl time.Duration) *entry {
	e := &entry{key: h.Key, limit: h.Limit, alg: h.Algorithm, group: h.Group, policy: pol}
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
// up to upTo tokens that took extra tokens beyond the hit's cost, ends
// the refill, and returns the tokens the lease holds. A refill that found
// less than it asked for left the bucket dry: a fixed window's is spent
// until the window ends; a token bucket's is decided by its model from
// here when the instance is alone (see [credit]), else its next refill
// waits until the bucket has refilled a cycle's tokens (see
// [entry.cycle]), as does every refill of a saturated key. Until then a hit the lease cannot serve is refused in
// process. Called with e.mu held.
func (e *entry) renew(now int64, r sluice.Result, upTo, extra int64, cyc cycle) int64 {
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
	e.deny.Store(nil)
	e.dryAt = 0
	if r.Receipt.Taken < upTo || cyc.sat && !cyc.alone {
		e.dryAt = now
		d := denial{cost: cyc.chunk, remaining: r.Remaining, fullAt: e.fullAt.Load()}
		switch {
		case e.interval == 0:
			d.cost, d.until = 1, now+int64(r.ResetAfter/time.Microsecond) // the window is spent until it ends
		case cyc.alone:
			e.anchor(now, r.ResetAfter)
		default: // the next refill once the bucket has refilled a cycle (after a dry take, it holds less than a token)
			d.until, d.upTo = now+cyc.tokens*e.interval, true
		}
		if d.until > now {
			e.deny.Store(&d)
		}
	}
	e.endRefill()
	return left
}

// refused ends a refill in a request that was not admitted, r being the
// backing store's answer to it: the held tokens reserved under generation
// gen go back, and a refusal of the refill itself, which asked for at
// least least tokens, is remembered for that least until it could pass; a
// token bucket alone starts its model from it (see [credit]), the bucket
// being full after raw, the backing store's ResetAfter.
func (e *entry) refused(now, least, held, gen int64, r sluice.Result, raw time.Duration, cyc cycle) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if held > 0 {
		e.putBack(gen, held)
	}
	if !r.Allowed {
		e.dryAt = now
		if e.interval > 0 && cyc.alone {
			e.anchor(now, raw) // the model answers from here, exactly
			e.endRefill()
			return
		}
	}
	if !r.Allowed && r.RetryAfter > 0 {
		e.deny.Store(&denial{cost: least, until: now + int64(r.RetryAfter/time.Microsecond), remaining: r.Remaining,
			fullAt: now + int64(r.ResetAfter/time.Microsecond)})
	}
	e.endRefill()
}

// refunded forgets e's remembered denial: n tokens came back to the
// backing bucket. A model that owes nothing ends (the backing store
// decides again); one that owes counts them back.
func (e *entry) refunded(n int64) {
	e.mu.Lock()
	e.deny.Store(nil)
	switch {
	case e.credit.owed > 0:
		e.credit.tat -= n * e.interval
	case e.credit.anchored > 0:
		e.endModel()
	}
	e.mu.Unlock()
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

// keep reports whether tokens reserved from e under generation gen may go
// back into its lease: a token bucket's always (tokens do not age); a
// fixed window's only while the lease they came from is the current one.
func (e *entry) keep(gen int64) bool {
	return e.interval > 0 || e.gen.Load() == gen
}

// denyUntil returns until when e's denial stands (0: none).
func (e *entry) denyUntil() int64 {
	if d := e.deny.Load(); d != nil {
		return d.until
	}
	return 0
}

// denied returns the result of a hit refused by e's denial d at now.
func (e *entry) denied(now int64, d *denial) sluice.Result {
	return sluice.Result{Limit: e.limit, Remaining: d.remaining, RetryAfter: time.Duration(d.until-now) * time.Microsecond,
		ResetAfter: time.Duration(max(0, d.fullAt-now)) * time.Microsecond}
}

// refuseServe answers a hit of cost c that e's lease cannot serve from
// e's standing denial, with no lock and no allocation: when the denial
// refuses c at now, it writes the refusal to out, as a refill's claim
// would find it (see [plan.claim]), and reports true. A cost beyond the
// capacity is left to the general path: it is unsatisfiable.
func (e *entry) refuseServe(now, c int64, out *sluice.Result) bool {
	d := e.deny.Load()
	if d == nil || c > e.limit.Capacity() || !d.refusesCost(now, c, e.interval == 0) {
		return false
	}
	*out = e.denied(now, d)
	return true
}

// anchor starts e's model from the backing store's answer to a call sent
// at now, whose ResetAfter is resetAfter: the bucket is full again at now
// + resetAfter. Called with e.mu held.
func (e *entry) anchor(now int64, resetAfter time.Duration) {
	c := &e.credit
	tat := now + int64(resetAfter/time.Microsecond) + c.owed*e.interval
	if c.anchored > 0 {
		tat = max(tat, c.tat)
	}
	c.tat, c.anchored = tat, now
}

// endModel ends e's model, which owes nothing. Called with e.mu held.
func (e *entry) endModel() { e.credit = credit{} }

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
