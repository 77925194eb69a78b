package lease

import (
	"context"
	"errors"
	"fmt"
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

type scratch struct {
	plans []plan
	hits  []sluice.Hit
	outs  []sluice.Result
}

// maxWaits is how often one call waits for another's refill of the same
// key before it passes through instead.
const maxWaits = 2

func (s *Store) getScratch(n int) *scratch {
	sc, _ := s.scratch.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	if cap(sc.plans) < n {
		sc.plans = make([]plan, n)
	}
	sc.plans = sc.plans[:n]
	sc.hits, sc.outs = sc.hits[:0], sc.outs[:0]
	return sc
}

func (s *Store) putScratch(sc *scratch) {
	clear(sc.plans)
	clear(sc.hits)
	s.scratch.Put(sc)
}

func (s *Store) takeSlow(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	sc := s.getScratch(len(hits))
	defer s.putScratch(sc)
	for wait := 0; ; wait++ {
		now := s.now()
		busy := s.plan(now, hits, sc.plans, wait < maxWaits)
		if busy == nil {
			return s.decide(ctx, now, hits, out, sc)
		}
		s.undo(sc.plans)
		select {
		case <-busy:
		case <-ctx.Done():
			return waitError(ctx)
		}
	}
}

// waitError is the error of a call whose context ended while it waited
// for another call's refill: nothing was sent, so it is not ambiguous. A
// deadline is a timeout; a cancellation is reported as the store being
// unavailable to the caller (as redisstore does), wrapping its cause.
func waitError(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err {
		err = fmt.Errorf("%w: %w", err, cause)
	}
	kind := sluice.ErrUnavailable
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		kind = sluice.ErrTimeout
	}
	return &sluice.StoreError{Op: "lease: take", Kind: kind, Err: err}
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

// decide makes the backing call the plans need, if any, and writes the
// results.
func (s *Store) decide(ctx context.Context, now int64, hits []sluice.Hit, out []sluice.Result, sc *scratch) error {
	admitted, err := s.callBacking(ctx, hits, sc)
	if err != nil {
		return err
	}
	s.settleBacked(now, hits, out, sc, admitted)
	s.settleLocal(now, out, sc.plans, admitted)
	return nil
}

// callBacking sends the hits that need the backing store to it in one
// call, if any, and reports whether the request is admitted: by the
// backing store, or, when nothing needs it, by every hit decided in
// process. A remembered denial only stands in for the backing store when
// nothing else needs it: otherwise it is sent like any other hit. A
// backing-store error undoes the plans.
func (s *Store) callBacking(ctx context.Context, hits []sluice.Hit, sc *scratch) (admitted bool, err error) {
	admitted, need := true, false
	for i := range sc.plans {
		switch sc.plans[i].kind {
		case kDeny:
			admitted = false
		case kPass, kRefill, kPeek:
			need = true
		}
	}
	if !need {
		return admitted, nil
	}
	for i := range sc.plans {
		p := &sc.plans[i]
		h := hits[i]
		switch p.kind {
		case kLocal:
			continue
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
		p.j = len(sc.hits)
		sc.hits = append(sc.hits, h)
	}
	if cap(sc.outs) < len(sc.hits) {
		sc.outs = make([]sluice.Result, len(sc.hits))
	}
	sc.outs = sc.outs[:len(sc.hits)]
	clear(sc.outs)
	if err := s.backing.Take(ctx, sc.hits, sc.outs); err != nil {
		s.undo(sc.plans)
		return false, err
	}
	return sluice.Admitted(sc.hits, sc.outs), nil
}

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
