package lease

import (
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/algo"
)

// How one hit of a request is decided.
type planKind uint8

const (
	kPass   planKind = iota // the backing store decides it as it is
	kLocal                  // served from the lease: reserved is its cost
	kRefill                 // a refill of up to upTo, at least need, with reserved held
	kDeny                   // refused in process: by a remembered denial, or by the model (modeled)
	kPeek                   // a peek: the backing's answer plus the lease
	kCredit                 // admitted by the model of a dry bucket (see credit): reserved is its cost, held of it from the lease
	kAnswer                 // a peek answered by the model
	kSettle                 // the settle of what the model owes, before the hit is planned again
)

// plan is how one hit of a request is decided, and what deciding it holds
// until the request is settled: tokens reserved from its entry's lease,
// the entry's refill.
type plan struct {
	kind     planKind
	e        *entry
	gen      int64
	reserved int64   // tokens taken from e.left for this hit
	need     int64   // kRefill: the least the refill must take
	upTo     int64   // kRefill: the most it may take
	least    int64   // kRefill: need with the tokens held: what a refusal of the refill refuses
	cyc      cycle   // kRefill: the entry's refill cycle
	held     int64   // kCredit: the lease's tokens the hit took
	settle   int64   // kSettle: the tokens to take
	owed     int64   // kSettle: the tokens owed when it was claimed
	modeled  bool    // o is the model's outcome for the hit
	d        *denial // kDeny, not modeled: the denial that refused it
	o        algo.Outcome
	marked   bool // this call owns e's refill
	j        int  // index in the backing call, or -1
	det      *detector
	split    bool // the hit goes to sub, a sub-bucket of its key
	sub      sluice.Hit
}

// claim plans, under the lock of p's entry, a hit of cost c under pol
// that the entry's lease did not serve, n instances sharing the bucket:
// it waits for a refill in flight (returning its channel, holding nothing)
// or passes through when it may not wait; it is served from the lease
// when tokens came back meanwhile, refused by the lease's denial (a
// remembered refusal, or a dry lease's wait for its next refill), or else
// claims the refill, of up to kmax tokens (of a dry bucket: up to kmax,
// at least a chunk; see [entry.cycle]). Tokens of a past window it finds
// held are lost (told to obs).
func (p *plan) claim(now int64, pol *sluice.LeasePolicy, c, kmax int64, n int, mayWait bool, obs Observer) <-chan struct{} {
	e := p.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.credit.anchored > 0 {
		switch {
		case e.modelLive(now):
			if ok, busy := p.byModel(now, c, kmax, n, mayWait); ok {
				return busy
			}
		case e.credit.owed > 0 && p.claimSettle(now):
			return nil
		case e.credit.owed > 0: // a settle is in flight
			return p.waitFor(mayWait)
		default:
			e.endModel()
		}
	}
	cyc := e.cycle(now, kmax, n)
	least := e.least(now, c, cyc)
	switch {
	case e.refilling != nil:
		return p.waitFor(mayWait)
	case e.reserve(c, now):
		p.kind, p.reserved = kLocal, c
		return nil
	case e.deny.Load().refuses(now, least, e.interval == 0):
		p.kind, p.d = kDeny, e.deny.Load()
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
	k := kmax
	if least == c { // not dry: the lease size follows the key's use
		ttl := e.ttl
		k = nextK(e.k, kmax, e.refilledAt > 0 && now < e.expires.Load() && now-e.refilledAt < ttl/2, e.refilledAt > 0 && now >= e.expires.Load())
	}
	e.k = k
	e.refilling = make(chan struct{})
	p.kind, p.reserved, p.marked = kRefill, held, true
	p.cyc = cyc
	p.least = least
	p.need = max(0, least-held)
	p.upTo = max(c, k) - held
	return nil
}

// undo gives back what p reserved and releases the refill it claimed,
// for a request that is not admitted or must start over.
func (p *plan) undo() {
	if p.kind == kCredit && p.reserved > 0 {
		p.e.mu.Lock()
		p.e.uncredit(p.reserved, p.held)
		p.e.mu.Unlock()
		p.reserved, p.held = 0, 0
	}
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
	case kLocal, kCredit, kAnswer:
		return h, false
	case kRefill:
		h.Cost, h.MinCost = p.upTo, p.need
	case kDeny:
		if p.modeled {
			return h, false // the model's answer stands: it is the bucket's
		}
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
	case kCredit:
		if !admitted {
			p.undo()
		}
		p.e.modelResult(&p.o, admitted, out)
		if admitted {
			out.Receipt = localReceipt(p.reserved, p.gen, p.e.served.Add(p.reserved))
		}
	case kAnswer:
		p.e.modelResult(&p.o, false, out)
	case kDeny:
		if p.modeled {
			p.e.modelResult(&p.o, false, out)
			return
		}
		*out = p.e.denied(now, p.d)
	}
}

// refused returns the result of p's refill for h in a request that was
// not admitted, r being the backing store's answer: the tokens p held
// count as in the bucket, and go back to the lease; a refusal of the
// refill itself is remembered.
func (p *plan) refused(now int64, h *sluice.Hit, r sluice.Result) sluice.Result {
	held := p.reserved
	raw := r.ResetAfter
	r.Remaining = min(h.Limit.Capacity(), r.Remaining+held)
	r.Receipt = sluice.Receipt{}
	r.Limit = h.Limit
	if p.e.interval > 0 {
		r.ResetAfter = max(0, r.ResetAfter-time.Duration(held*p.e.interval)*time.Microsecond)
	}
	p.e.refused(now, p.least, held, p.gen, r, raw, p.cyc)
	p.marked, p.reserved = false, 0
	return r
}

// claimSettle claims, for p, the settle of what e owes at now, when there
// is one to make: it reports false, having settled nothing, when the
// tokens owed have all refilled (they are forgotten) or a refill or settle
// is in flight. Called with e.mu held.
func (p *plan) claimSettle(now int64) bool {
	e := p.e
	x := e.settleAmount(now)
	if x == 0 {
		e.credit.owed, e.credit.since = 0, 0
		return false
	}
	if e.refilling != nil {
		return false
	}
	e.refilling = make(chan struct{})
	p.kind, p.marked, p.settle, p.owed = kSettle, true, x, e.credit.owed
	return true
}

// byModel plans a hit of cost c that e's lease cannot serve, under e's
// live model, n instances sharing its bucket, with e.mu held. It reports
// whether it planned it, and the refill or settle in flight to wait for:
// decided by the model (admitted on credit, or refused); or a settle of
// what is owed first (the model ends when the instance count is no longer
// 1; half a lease is owed). It waits, rather than owe more than K, while
// another call settles, however often it waited before (a settle ends).
func (p *plan) byModel(now, c, kmax int64, n int, mayWait bool) (bool, <-chan struct{}) {
	e := p.e
	cr := &e.credit
	if n != 1 {
		if cr.owed > 0 && p.claimSettle(now) {
			return true, nil
		}
		if cr.owed > 0 { // a settle is in flight
			return true, p.waitFor(mayWait)
		}
		e.endModel()
		return false, nil
	}
	if cr.owed >= (kmax+1)/2 && p.claimSettle(now) {
		return true, nil
	}
	if cr.owed+c > kmax && e.refilling != nil {
		return true, e.refilling // never more than K owed: the settle in flight ends soon
	}
	held := e.left.Swap(0)
	o := e.decideByModel(now, c, held)
	p.o, p.modeled = o, true
	if !o.Allowed {
		e.left.Add(held)
		p.kind = kDeny
		return true, nil
	}
	p.kind, p.reserved, p.held = kCredit, c, held
	return true, nil
}

// waitFor returns the refill or settle in flight on p's entry to wait for,
// or, when p may not wait, nil with p planned to pass through.
func (p *plan) waitFor(mayWait bool) <-chan struct{} {
	if mayWait {
		return p.e.refilling
	}
	p.kind, p.e = kPass, nil
	return nil
}
