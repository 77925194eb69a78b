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

type plan struct {
	kind     planKind
	e        *entry
	gen      int64
	reserved int64 // tokens taken from e.left for this hit
	need     int64 // kRefill: the least the refill must take
	upTo     int64 // kRefill: the most it may take
	marked   bool  // this call owns e's refill
	j        int   // index in the backing call, or -1
	det      *detector
	split    bool // the hit goes to sub, a sub-bucket of its key
	sub      sluice.Hit
}

// plan decides what each hit needs, reserving local tokens and claiming
// refills. When a refill it needs is in flight in another call and it may
// wait, it returns that refill's channel, holding nothing (undo releases
// what it reserved): a call waits only while it owns no refill, so two
// calls never wait for each other.
func (s *Store) plan(now int64, hits []sluice.Hit, plans []plan, mayWait bool) <-chan struct{} {
	if hits[0].Force {
		for i := range plans {
			plans[i] = plan{kind: kPass, j: -1}
		}
		return nil
	}
	for i := range hits {
		if busy := s.planHit(now, &hits[i], &plans[i], mayWait); busy != nil {
			return busy
		}
	}
	return nil
}

// planHit plans h into p: it passes through unless its bucket is leased;
// a leased hit is served from its lease when the lease holds its cost,
// else planned by planRefill. It returns the channel of a refill in
// flight to wait for, or nil.
func (s *Store) planHit(now int64, h *sluice.Hit, p *plan, mayWait bool) <-chan struct{} {
	*p = plan{j: -1}
	pol := s.policy(h)
	if s.refunder == nil || !pol.Active() || h.Shadow || h.MinCost != 0 {
		return nil
	}
	c := h.Units()
	kmax := s.kmax(h, pol)
	hot, det := s.hotKey(pol, h, now, kmax, c, p)
	p.det = det
	leased := pol.Enabled || hot && pol.HotKeys.Lease
	if !leased || kmax == 0 || c > h.Limit.Capacity() {
		return nil
	}
	if h.Peek {
		p.kind = kPeek
		p.e = s.table.get(h.Key)
		return nil
	}
	e := s.table.getOrCreate(h.Key, now, func() *entry { return s.newEntry(h, pol) })
	if e == nil || e.limit != h.Limit || e.alg != h.Algorithm {
		return nil
	}
	p.e, p.gen = e, e.gen.Load()
	if reserve(e, c, now) {
		p.kind, p.reserved = kLocal, c
		return nil
	}
	return s.planRefill(now, pol, e, c, kmax, p, mayWait)
}

// planRefill plans, under e's lock, a hit of cost c its lease did not
// serve: it waits for a refill in flight (returning its channel) or
// passes through when it may not wait; it is served from the lease when
// tokens came back meanwhile, refused by the lease's remembered denial of
// that cost, or else claims the refill.
func (s *Store) planRefill(now int64, pol *sluice.LeasePolicy, e *entry, c, kmax int64, p *plan, mayWait bool) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.refilling != nil && mayWait:
		return e.refilling
	case e.refilling != nil:
		p.e = nil // pass through this time
		return nil
	case reserve(e, c, now):
		p.kind, p.reserved = kLocal, c
		return nil
	case now < e.deny.until && c == e.deny.cost:
		p.kind = kDeny
		return nil
	}
	// Claim the refill. A token bucket's held tokens count toward the
	// cost (they do not age); a fixed window's from a past window are
	// worth nothing.
	held := e.left.Swap(0)
	if held > 0 && e.interval == 0 && now >= e.windowEnd() {
		s.obs.LeaseLost(pol.Rule, held) // tokens of a past window
		held = 0
	}
	if held >= c { // a refund came back meanwhile
		e.left.Add(held - c)
		p.kind, p.reserved = kLocal, c
		return nil
	}
	ttl := e.ttl
	k := nextK(e.k, kmax, e.refilledAt > 0 && now < e.expires.Load() && now-e.refilledAt < ttl/2, e.refilledAt > 0 && now >= e.expires.Load(), e.dry)
	e.k = k
	e.refilling = make(chan struct{})
	p.kind, p.reserved, p.marked = kRefill, held, true
	p.need = c - held
	p.upTo = max(c, k) - held
	return nil
}

// reserve takes c tokens from e's lease if it is live and holds them.
func reserve(e *entry, c, now int64) bool {
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

// undo gives back what plans reserved and releases the refills they
// claimed, for a request that is not admitted or must start over.
func (s *Store) undo(plans []plan) {
	for i := range plans {
		p := &plans[i]
		if p.reserved > 0 && p.e.keep(p.gen) {
			p.e.left.Add(p.reserved)
		}
		p.reserved = 0
		if p.marked {
			p.e.mu.Lock()
			close(p.e.refilling)
			p.e.refilling = nil
			p.e.mu.Unlock()
			p.marked = false
		}
	}
}

func (s *Store) newEntry(h *sluice.Hit, pol *sluice.LeasePolicy) *entry {
	e := &entry{limit: h.Limit, alg: h.Algorithm, policy: pol}
	if h.Algorithm == sluice.TokenBucket {
		e.interval = h.Limit.IntervalMicros()
	}
	ttl := s.cfg.TTL
	if pol.TTL > 0 {
		ttl = pol.TTL
	}
	e.ttl = int64(ttl / time.Microsecond)
	return e
}

// kmax returns the largest lease h's bucket may take under pol: the drift
// bound, the store's cap and the policy's.
func (s *Store) kmax(h *sluice.Hit, pol *sluice.LeasePolicy) int64 {
	k := min(MaxLease(h.Limit, h.Algorithm, s.instances(), s.cfg.DriftBudget), s.cfg.MaxLease)
	if pol.MaxLease > 0 {
		k = min(k, pol.MaxLease)
	}
	if k < minLeaseForLeasing {
		return 0
	}
	return k
}
