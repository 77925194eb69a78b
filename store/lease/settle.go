package lease

import (
	"time"

	"github.com/sluicehq/sluice"
)

// settleBacked counts the hits not served from leases toward their keys'
// hotness, and writes the results of the hits the backing store decided:
// a refill of a request admitted installs its lease.
func (s *Store) settleBacked(now int64, hits []sluice.Hit, out []sluice.Result, sc *scratch, admitted bool) {
	for i := range sc.plans {
		p := &sc.plans[i]
		h := &hits[i]
		if p.kind == kLocal {
			continue // counted with the refill that leased its tokens
		}
		if p.det != nil && p.kind != kPeek {
			// A hit refused by a remembered denial counts as one the
			// backing store refused.
			p.det.Observe(h.Key, h.Units(), now)
		}
		switch p.kind {
		case kPass:
			out[i] = s.passed(now, h, p, sc.outs[p.j])
		case kPeek:
			out[i] = s.withLease(now, h, p.e, sc.outs[p.j], true)
		case kRefill:
			if admitted {
				out[i] = s.install(now, h, p, sc.outs[p.j])
				continue
			}
			out[i] = s.refused(now, h, p, sc.outs[p.j])
		}
	}
}

// passed returns the result of a hit that passed through: the backing
// store's, with what the key's lease holds; a split hit's is its
// sub-bucket's, with no receipt.
func (s *Store) passed(now int64, h *sluice.Hit, p *plan, r sluice.Result) sluice.Result {
	if p.split {
		r.Receipt = sluice.Receipt{} // a sub-bucket's take cannot be named by the hit
		return r
	}
	if p.e == nil && s.refunder != nil {
		p.e = s.table.get(h.Key)
	}
	return s.withLease(now, h, p.e, r, false)
}

// settleLocal writes the results of the hits decided in process: served
// from a lease (given back when the request is not admitted), or refused
// by the lease's remembered denial.
func (s *Store) settleLocal(now int64, out []sluice.Result, plans []plan, admitted bool) {
	for i := range plans {
		p := &plans[i]
		switch p.kind {
		case kLocal:
			left := p.e.left.Load()
			if !admitted {
				if p.e.keep(p.gen) {
					left = p.e.left.Add(p.reserved)
				}
				p.reserved = 0
			}
			p.e.report(now, left, &out[i])
			out[i].Allowed = true
			if admitted {
				out[i].Receipt = localReceipt(p.reserved, p.gen, p.e.served.Add(p.reserved))
			}
		case kDeny:
			e := p.e
			e.mu.Lock()
			d := e.deny
			e.mu.Unlock()
			out[i] = sluice.Result{Limit: e.limit, Remaining: d.remaining, RetryAfter: time.Duration(d.until-now) * time.Microsecond,
				ResetAfter: time.Duration(max(0, d.fullAt-now)) * time.Microsecond}
		}
	}
}

// install makes a refill the backing store admitted the key's lease, and
// returns the hit's result: served from it.
func (s *Store) install(now int64, h *sluice.Hit, p *plan, r sluice.Result) sluice.Result {
	e := p.e
	taken := r.Receipt.Taken
	extra := max(0, taken-p.need)
	// own: the hit took exactly its cost from the backing store, so its
	// receipt is the backing store's, refundable there whatever becomes
	// of the lease.
	own := extra == 0 && p.reserved == 0
	e.mu.Lock()
	gen := s.record(now, e, h, p, r.Receipt, own)
	left := e.renew(now, p, r, extra)
	var lost int64
	if s.givenBack.Load() {
		// Close gave the leases back without waiting for this refill:
		// what it holds can no longer go back.
		lost = e.left.Swap(0)
	}
	e.mu.Unlock()
	p.marked, p.reserved = false, 0
	s.obs.LeaseRefilled(e.policy.Rule, taken)
	if lost > 0 {
		s.obs.LeaseLost(e.policy.Rule, lost)
	}
	if p.det != nil && extra > 0 {
		p.det.Observe(h.Key, extra, now)
	}
	var out sluice.Result
	e.report(now, left, &out)
	out.Allowed = true
	if own {
		out.Receipt = r.Receipt
	} else {
		out.Receipt = localReceipt(h.Units(), gen, e.served.Add(h.Units()))
	}
	return out
}

// record remembers a refill that took rc for h, for give-backs (none
// when own: the caller may refund its receipt), and starts the lease's
// new generation, which it returns. Called with e.mu held.
func (s *Store) record(now int64, e *entry, h *sluice.Hit, p *plan, rc sluice.Receipt, own bool) int64 {
	t := take{hit: *h, receipt: rc, left: rc.Taken}
	if own {
		t.left = 0 // the hit's own receipt is this one: the caller may refund it
	}
	t.hit.Lease = e.policy // names the rule when the policy is the default
	t.hit.Cost, t.hit.MinCost = p.upTo, p.need
	newWindow := e.interval == 0 && now >= e.windowEnd()
	if newWindow {
		e.takes = [maxTakes]take{} // a new window: the old takes are spent
	}
	e.push(t)
	gen := s.gens.Add(1)
	e.gen.Store(gen)
	if newWindow || e.epoch == 0 {
		e.epoch = gen // receipts of past windows' leases are spent
	}
	return gen
}

// renew sets e's lease from the backing store's answer r to a refill
// that took extra tokens beyond the hit's cost, ends the refill, and
// returns the tokens the lease holds. Called with e.mu held.
func (e *entry) renew(now int64, p *plan, r sluice.Result, extra int64) int64 {
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
	e.dry = r.Receipt.Taken < p.upTo
	e.deny = denial{}
	close(e.refilling)
	e.refilling = nil
	return left
}

// refused writes the result of a refill in a request that was not
// admitted, gives back what the hit held, and remembers a refusal of the
// refill itself.
func (s *Store) refused(now int64, h *sluice.Hit, p *plan, r sluice.Result) sluice.Result {
	e := p.e
	held := p.reserved
	r.Remaining = min(h.Limit.Capacity(), r.Remaining+held)
	r.Receipt = sluice.Receipt{}
	r.Limit = h.Limit
	if e.interval > 0 {
		r.ResetAfter = max(0, r.ResetAfter-time.Duration(held*e.interval)*time.Microsecond)
	}
	e.mu.Lock()
	if held > 0 && e.keep(p.gen) {
		e.left.Add(held)
	}
	if !r.Allowed {
		e.dry = true
	}
	if !r.Allowed && r.RetryAfter > 0 {
		e.deny = denial{cost: h.Units(), until: now + int64(r.RetryAfter/time.Microsecond), remaining: r.Remaining,
			fullAt: now + int64(r.ResetAfter/time.Microsecond)}
	}
	close(e.refilling)
	e.refilling = nil
	e.mu.Unlock()
	p.marked, p.reserved = false, 0
	return r
}

// withLease is the backing store's answer for h with the tokens h's lease
// holds counted as in the bucket; a peek that the held tokens let pass is
// allowed.
func (s *Store) withLease(now int64, h *sluice.Hit, e *entry, r sluice.Result, peek bool) sluice.Result {
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
