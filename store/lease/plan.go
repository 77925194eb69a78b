package lease

import (
	"time"

	"github.com/sluicehq/sluice"
)

// How one hit of a request is decided.
type planKind uint8

const (
	kPass   planKind = iota // the backing store decides it as it is
	kLocal                  // served from the lease: reserved is its cost
	kRefill                 // a refill of up to upTo, at least need, with reserved held
	kDeny                   // refused in process by a remembered denial
	kPeek                   // a peek: the backing's answer plus the lease
)

// plan is how one hit of a request is decided, and what deciding it holds
// until the request is settled: tokens reserved from its entry's lease,
// the entry's refill.
type plan struct {
	kind     planKind
	e        *entry
	deny     denial // kDeny: the entry's denial as the claim found it
	gen      int64
	reserved int64 // tokens taken from e.left for this hit
	need     int64 // kRefill: the least the refill must take
	upTo     int64 // kRefill: the most it may take
	least    int64 // kRefill: need with the tokens held: what a refusal of the refill refuses
	cyc      cycle // kRefill: the entry's refill cycle at the claim
	answered int64 // kRefill: µs when the backing store's answer came (0: not read)
	marked   bool  // this call owns e's refill
	j        int   // index in the backing call, or -1
	det      *detector
	split    bool // the hit goes to sub, a sub-bucket of its key
	sub      sluice.Hit
}

// claim plans, under the lock of p's entry, a hit of cost c under pol
// that the entry's lease did not serve, n instances sharing its bucket:
// it waits for a refill in flight (returning its channel, holding nothing)
// or passes through when it may not wait; it is served from the lease
// when tokens came back meanwhile, refused by the lease's remembered
// denial (a refusal of that cost, or a saturated key's wait for its next
// refill), or else claims the refill, of up to kmax tokens (of a
// saturated token bucket: up to kmax, at least a chunk; see [cycle]).
// Tokens of a past window it finds held are lost (told to obs).
func (p *plan) claim(now int64, pol *sluice.LeasePolicy, c, kmax int64, n int, mayWait bool, obs Observer) <-chan struct{} {
	e := p.e
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.refilling != nil && mayWait:
		return e.refilling
	case e.refilling != nil:
		p.e = nil // pass through this time
		return nil
	case e.reserve(c, now):
		p.kind, p.reserved = kLocal, c
		return nil
	case e.deny.refuses(now, c):
		if e.deny.upTo {
			e.satAt = now // a saturated key's check waits for its refill: it stays saturated
		}
		// A copy: a refill that ends before the request is settled
		// clears or replaces e.deny.
		p.kind, p.deny = kDeny, e.deny
		return nil
	}
	// Claim the refill. A token bucket's held tokens count toward the
	// cost (they do not age); a fixed window's from a past window are
	// worth nothing.
	held := e.left.Swap(0)
	if held > 0 && e.interval == 0 && now >= e.windowEnd() {
		obs.LeaseLost(pol.Rule, held) // tokens of a past window
		held = 0
	}
	if held >= c { // a refund came back meanwhile
		e.left.Add(held - c)
		p.kind, p.reserved = kLocal, c
		return nil
	}
	cyc := e.cycle(now, kmax, n)
	k := kmax // a saturated key asks for all it may hold
	if !cyc.sat {
		ttl := e.ttl
		k = nextK(e.k, kmax, e.refilledAt > 0 && now < e.expires.Load() && now-e.refilledAt < ttl/2, e.refilledAt > 0 && now >= e.expires.Load(), e.dry)
	}
	e.k = k
	e.refilling = make(chan struct{})
	p.kind, p.reserved, p.marked = kRefill, held, true
	p.cyc = cyc
	p.upTo = max(c, k) - held
	p.least = min(cyc.least(c), max(c, k))
	p.need = p.least - held
	return nil
}

// answeredAt returns when the backing store's answer to p's refill came:
// the time read after the call, else now.
func (p *plan) answeredAt(now int64) int64 {
	return max(now, p.answered)
}

// undo gives back what p reserved and releases the refill it claimed,
// for a request that is not admitted or must start over.
func (p *plan) undo() {
	if p.reserved > 0 {
		p.e.putBack(p.gen, p.reserved)
	}
	p.reserved = 0
	if p.marked {
		p.e.mu.Lock()
		p.e.endRefill()
		p.e.mu.Unlock()
		p.marked = false
	}
}

// undoAll undoes every plan of a request.
func undoAll(plans []plan) {
	for i := range plans {
		plans[i].undo()
	}
}

// backingHit returns the hit p sends to the backing store for h, and
// whether it sends one: a refill asks for up to upTo tokens, at least
// need; a hit its remembered denial refused goes as it is (it is sent
// only when the backing store is called anyway), as does a peek; a split
// hit goes to its sub-bucket.
func (p *plan) backingHit(h sluice.Hit) (sluice.Hit, bool) {
	switch p.kind {
	case kLocal:
		return h, false
	case kRefill:
		h.Cost, h.MinCost = p.upTo, p.need
	case kDeny:
		p.kind = kPass
		fallthrough
	case kPass:
		if p.split {
			h = p.sub
		}
	}
	return h, true
}

// refill returns the refill p made for h as the backing store took it
// (receipt rc), for give-backs: nothing of it goes back when own (the
// hit's receipt is rc: the caller may refund it).
func (p *plan) refill(h *sluice.Hit, rc sluice.Receipt, own bool) take {
	t := take{hit: *h, receipt: rc, left: rc.Taken}
	if own {
		t.left = 0
	}
	t.hit.Lease = p.e.policy // names the rule when the policy is the default
	t.hit.Cost, t.hit.MinCost = p.upTo, p.need
	return t
}

// settleLocal writes to out the result of a hit decided in process:
// served from p's lease (given back when the request is not admitted), or
// refused by the lease's remembered denial.
func (p *plan) settleLocal(now int64, out *sluice.Result, admitted bool) {
	switch p.kind {
	case kLocal:
		left := p.e.left.Load()
		if !admitted {
			left = p.e.putBack(p.gen, p.reserved)
			p.reserved = 0
		}
		p.e.report(now, left, out)
		out.Allowed = true
		if admitted {
			out.Receipt = localReceipt(p.reserved, p.gen, p.e.served.Add(p.reserved))
		}
	case kDeny:
		*out = p.e.denied(&p.deny, now)
	}
}

// refused returns the result of p's refill for h in a request that was
// not admitted, r being the backing store's answer: the tokens p held
// count as in the bucket, and go back to the lease; a refusal of the
// refill itself is remembered.
func (p *plan) refused(now int64, h *sluice.Hit, r sluice.Result) sluice.Result {
	held := p.reserved
	r.Remaining = min(h.Limit.Capacity(), r.Remaining+held)
	r.Receipt = sluice.Receipt{}
	r.Limit = h.Limit
	if p.e.interval > 0 {
		r.ResetAfter = max(0, r.ResetAfter-time.Duration(held*p.e.interval)*time.Microsecond)
	}
	p.e.refused(now, p.answeredAt(now), p.least, held, p.gen, r, p.cyc)
	p.marked, p.reserved = false, 0
	return r
}
