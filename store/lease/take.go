package lease

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice"
)

// Take decides hits (see [sluice.Store]) all-or-nothing. A hit of a
// leased bucket is served from the local lease with no I/O when the lease
// holds its cost; otherwise the hits that need the backing store (refills
// of up to K tokens, and the hits that pass through) go to it in one call.
// The local part is decided first, so the backing store is called only
// for a request every local lease admits, and a request the backing store
// refuses gives back what it reserved locally. A backing-store error is
// returned as it is, so the rule's on_fail applies; leases keep serving
// until they expire.
func (s *Store) Take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	if len(hits) == 1 && len(out) > 0 && s.takeLocal(&hits[0], &out[0]) {
		return nil
	}
	if err := sluice.CheckHits(hits, out); err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	if s.closed.Load() {
		return errClosed()
	}
	if s.refusals.Answer(hits, out) { // changes no lease: no need to hold off Close
		s.answered(hits, out)
		return nil
	}
	return s.takeHeld(ctx, hits, out)
}

// takeHeld is Take for hits the memory of refusals did not answer, holding
// off Close while it may change leases.
func (s *Store) takeHeld(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	s.calls.RLock()
	defer s.calls.RUnlock()
	if s.closed.Load() {
		return errClosed()
	}
	sent := s.nanos()
	err := s.takeSlow(ctx, hits, out)
	if err == nil {
		s.record.Note(hits, out, sent)
		s.refusals.Remember(hits, out, sent)
	}
	return err
}

// TakeLocal decides hits with no I/O when every one of them is a plain hit
// its lease can serve, and reports true; otherwise it decides and consumes
// nothing and reports false (see [sluice.LocalStore]). The middleware
// calls it before Take, so a request served from leases needs no context
// with a deadline.
func (s *Store) TakeLocal(hits []sluice.Hit, out []sluice.Result) bool {
	if len(out) < len(hits) || len(hits) == 0 {
		return false
	}
	if !s.closed.Load() && s.refusals.Answer(hits, out) {
		s.answered(hits, out)
		return true
	}
	for i := range hits {
		if !s.takeLocal(&hits[i], &out[i]) {
			// Give back what the earlier hits took: the request is not
			// decided here.
			for j := range i {
				if e := s.table.get(hits[j].Key); e != nil {
					e.putBack(out[j].Receipt.Mark, out[j].Receipt.Taken)
				}
			}
			return false
		}
	}
	return true
}

// takeLocal serves a plain hit from a live lease: no lock, no I/O, no
// allocation. It reports false when the hit needs the general path.
func (s *Store) takeLocal(h *sluice.Hit, out *sluice.Result) bool {
	if h.Peek || h.Force || h.Shadow || h.MinCost != 0 || h.Cost < 0 || h.Key == "" || s.closed.Load() {
		return false
	}
	e := s.table.get(h.Key)
	if e == nil || e.limit != h.Limit || e.alg != h.Algorithm || e.left.Load() < h.Units() {
		return false // the last test saves a dry lease's checks a clock read
	}
	return e.serve(s.micros(), h.Units(), out)
}

// answered completes the results of a call the memory of refusals
// answered: its undecided hits get what the leases know of their buckets
// (see [Store.fillKnown]), and the hits count toward hot-key detection.
func (s *Store) answered(hits []sluice.Hit, out []sluice.Result) {
	s.fillKnown(hits, out)
	s.observeAnswered(hits)
}

// observeAnswered counts toward hot-key detection the hits of a request
// answered by the memory of refusals, with no backing call: as each would
// have been counted had the request gone to the backing store, so a key
// flooded while over its limit turns hot (and splits) as any other.
func (s *Store) observeAnswered(hits []sluice.Hit) {
	if s.refunder == nil {
		return // nothing is detected over this backing store (see planHit)
	}
	var now int64
	read := false
	for i := range hits {
		h := &hits[i]
		pol := s.policyOf(h)
		if !pol.Active() || h.Shadow || h.MinCost != 0 || h.Peek {
			continue
		}
		d := s.hot.detector(pol)
		if d == nil {
			continue
		}
		if !read {
			now, read = s.micros(), true
		}
		d.Observe(h.Key, h.Units(), now)
	}
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
	sc, _ := s.scratches.Get().(*scratch)
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
	s.scratches.Put(sc)
}

// takeSlow plans the hits, the backing call they need and the results
// they get. A call that must wait for another call's refill starts over
// when it ends.
func (s *Store) takeSlow(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	sc := s.getScratch(len(hits))
	defer s.putScratch(sc)
	for wait := 0; ; wait++ {
		now := s.micros()
		busy := s.planHits(now, hits, sc.plans, wait < maxWaits)
		if busy == nil {
			return s.decide(ctx, now, hits, out, sc)
		}
		undoAll(sc.plans)
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

// planHits decides what each hit needs, reserving local tokens and
// claiming refills. When a refill it needs is in flight in another call
// and it may wait, it returns that refill's channel, holding nothing
// (undoAll releases what it reserved): a call waits only while it owns no
// refill, so two calls never wait for each other.
func (s *Store) planHits(now int64, hits []sluice.Hit, plans []plan, mayWait bool) <-chan struct{} {
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

// planHit plans h into p: it passes through unless its bucket is leased
// (a hot key that is not leased passes through to a sub-bucket when its
// rule splits it); a leased hit is served from its lease when the lease
// holds its cost, else planned by [plan.claim]. It returns the channel of
// a refill in flight to wait for, or nil.
func (s *Store) planHit(now int64, h *sluice.Hit, p *plan, mayWait bool) <-chan struct{} {
	*p = plan{j: -1}
	pol := s.policyOf(h)
	if s.refunder == nil || !pol.Active() || h.Shadow || h.MinCost != 0 {
		return nil
	}
	c := h.Units()
	kmax := s.kmax(h, pol)
	det, sp, hot := s.hot.lookup(pol, h.Key, now)
	p.det = det
	leased := (pol.Enabled || hot && pol.HotKeys.Lease) && kmax > 0 && c <= h.Limit.Capacity()
	if hot && sp != nil && !h.Peek && !leased {
		p.sub, p.split = sp.next(h, c)
	}
	if !leased {
		return nil
	}
	if h.Peek {
		p.kind = kPeek
		p.e = s.table.get(h.Key)
		return nil
	}
	e := s.table.getOrCreate(h.Key, now, func() *entry { return newEntry(h, pol, s.cfg.TTL) })
	if e == nil || e.limit != h.Limit || e.alg != h.Algorithm {
		return nil
	}
	p.e, p.gen = e, e.gen.Load()
	if e.reserve(c, now) {
		p.kind, p.reserved = kLocal, c
		return nil
	}
	return p.claim(now, pol, c, kmax, max(s.Instances(), 1), mayWait, s.obs)
}

// decide makes the backing call the plans need, if any, and writes the
// results.
func (s *Store) decide(ctx context.Context, now int64, hits []sluice.Hit, out []sluice.Result, sc *scratch) error {
	admitted, called, err := s.callBacking(ctx, hits, sc)
	if err != nil {
		return err
	}
	var answered int64
	for i := range sc.plans {
		if p := &sc.plans[i]; p.kind == kRefill {
			if answered == 0 {
				answered = s.micros() // a saturated key's next refill is timed from the answer: never early
			}
			p.answered = answered
		}
	}
	s.settleBacked(now, hits, out, sc, admitted)
	for i := range sc.plans {
		sc.plans[i].settleLocal(now, &out[i], admitted)
	}
	if !called && !admitted && s.record != nil {
		// Refused in process by remembered denials, with no call to a
		// backing store behind a network: an answer from memory (see
		// [sluice.Result.Remembered]). The other hits were served from
		// leases and gave their tokens back: undecided, nothing
		// consumed. Over an in-process backing store nothing is
		// remembered (see Config.RememberRefusals).
		for i := range hits {
			out[i].Remembered = true
		}
	}
	return nil
}

// callBacking sends the hits that need the backing store to it in one
// call, if any, and reports whether the request is admitted: by the
// backing store, or, when nothing needs it, by every hit decided in
// process; and whether it called the backing store. A remembered denial
// only stands in for the backing store when nothing else needs it:
// otherwise it is sent like any other hit. A backing-store error undoes
// the plans.
func (s *Store) callBacking(ctx context.Context, hits []sluice.Hit, sc *scratch) (admitted, called bool, err error) {
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
		return admitted, false, nil
	}
	for i := range sc.plans {
		p := &sc.plans[i]
		if h, ok := p.backingHit(hits[i]); ok {
			p.j = len(sc.hits)
			sc.hits = append(sc.hits, h)
		}
	}
	if cap(sc.outs) < len(sc.hits) {
		sc.outs = make([]sluice.Result, len(sc.hits))
	}
	sc.outs = sc.outs[:len(sc.hits)]
	clear(sc.outs)
	if err := s.backing.Take(ctx, sc.hits, sc.outs); err != nil {
		undoAll(sc.plans)
		return false, true, err
	}
	return sluice.Admitted(sc.hits, sc.outs), true, nil
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
			out[i] = p.e.withLease(now, h, sc.outs[p.j], true)
		case kRefill:
			if admitted {
				out[i] = s.install(now, h, p, sc.outs[p.j])
				continue
			}
			out[i] = p.refused(now, h, sc.outs[p.j])
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
	return p.e.withLease(now, h, r, false)
}

// install makes a refill the backing store admitted (its answer r) the
// key's lease, starting its next generation, and returns the hit's
// result: served from it.
func (s *Store) install(now int64, h *sluice.Hit, p *plan, r sluice.Result) sluice.Result {
	e := p.e
	taken := r.Receipt.Taken
	extra := max(0, taken-(h.Units()-p.reserved)) // beyond what the hit itself needed with the tokens it held
	// own: the hit took exactly its cost from the backing store, so its
	// receipt is the backing store's, refundable there whatever becomes
	// of the lease.
	own := extra == 0 && p.reserved == 0
	e.mu.Lock()
	gen := s.gens.Add(1)
	e.record(now, p.refill(h, r.Receipt, own), gen)
	left := e.renew(now, p.answeredAt(now), r, p.upTo, extra, p.cyc)
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
