package lease

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice"
)

// giveBack returns the unused tokens of expired leases (all: of every
// lease) to the backing store in one refund call, and forgets entries
// that hold nothing. A failed refund is counted and logged, never retried:
// a retry could give back twice.
func (s *Store) giveBack(ctx context.Context, all bool) error {
	now := s.now()
	var refunds []sluice.Refund
	s.table.each(nil, nil, func(e *entry) bool {
		if all {
			e.mu.Lock() // closing: every lease goes back
		} else if !e.mu.TryLock() {
			return false // busy: a refill or a return is under way
		}
		defer e.mu.Unlock()
		if e.refilling != nil && !all {
			return false
		}
		exp := e.expires.Load()
		if !all && e.live(now) {
			return false
		}
		// The lease goes back: receipts of it and of the leases before
		// it can no longer be refunded into the next one.
		e.epoch = e.gen.Load() + 1
		if n := e.left.Swap(0); n > 0 {
			e.expires.Store(min(exp, now))
			lost := n
			switch {
			case s.refunder == nil:
			case e.interval == 0 && now >= e.windowEnd():
				// The window the tokens belong to has passed.
			default:
				refunds, lost = e.returns(refunds, n)
			}
			if lost > 0 {
				s.obs.LeaseLost(e.policy.Rule, lost)
			}
			return false
		}
		// Nothing held: forget it once its lease and any denial are a
		// TTL in the past (its lease size starts small again).
		return all || now >= exp+e.ttl && now >= e.deny.until
	})
	s.obs.LeasedKeys(s.table.len())
	return s.refund(ctx, refunds)
}

// refund gives back unused lease tokens. A failure is counted and
// logged, never retried: a retry could give back twice.
func (s *Store) refund(ctx context.Context, refunds []sluice.Refund) error {
	if len(refunds) == 0 {
		return nil
	}
	if err := s.refunder.Refund(ctx, refunds); err != nil {
		s.refundFailed(refunds)
		for i := range refunds {
			s.obs.LeaseLost(refunds[i].Hit.Lease.Rule, refunds[i].Amount())
		}
		s.cfg.Logger.Warn("sluice: lease tokens not given back", "refunds", len(refunds), "err", err)
		return fmt.Errorf("lease: give back: %w", err)
	}
	for i := range refunds {
		s.obs.LeaseReturned(refunds[i].Hit.Lease.Rule, refunds[i].Amount())
	}
	return nil
}

// Refund gives back what hits took (see [sluice.Refunder]). A hit served
// from a lease goes back into the key's current lease while it is live
// and no lease of the key went back since the one the hit was served from
// (refills in between do not matter; a fixed window's new window does);
// otherwise its tokens went back, or were lost, with the lease: the
// refund does nothing and is counted as lost (Observer.LeaseLost). Such a
// receipt gives each of its tokens back once: refunded again, or with a
// Receipt.Taken larger than the hit took, it gives back nothing more. The
// store tells apart the last 1,024 tokens served from a key's leases; the
// tokens of a hit served before them are counted as lost. A refund that
// gives tokens back clears the key's remembered denial. Other refunds go
// to the backing store, which bounds them as it does its own; over a
// backing store that is not a Refunder they are an error wrapping
// [sluice.ErrInvalidHit].
func (s *Store) Refund(ctx context.Context, refunds []sluice.Refund) error {
	if err := sluice.CheckRefunds(refunds); err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	s.calls.RLock()
	defer s.calls.RUnlock()
	if s.closed.Load() {
		return errClosed()
	}
	for i := range refunds { // tokens come back: what was refused may pass
		s.refusals.Forget(refunds[i].Hit.Key)
	}
	now := s.now()
	var pass []sluice.Refund
	for i := range refunds {
		if r := &refunds[i]; isLocal(r.Receipt) {
			s.refundLocal(now, r)
		} else {
			pass = append(pass, *r)
		}
	}
	if len(pass) == 0 {
		return nil
	}
	return s.refundBacking(ctx, pass)
}

// refundLocal gives back into its key's lease what a hit served from a
// lease took, when that lease may still take it; else counts it as lost.
func (s *Store) refundLocal(now int64, r *sluice.Refund) {
	e := s.table.get(r.Hit.Key)
	if e == nil {
		s.obs.LeaseLost(s.ruleOf(&r.Hit), r.Amount())
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.refundable(r.Receipt.Mark, now) {
		// The lease went back or expired with the tokens: they are
		// lost to this refund.
		s.obs.LeaseLost(e.policy.Rule, r.Amount())
		return
	}
	back, lost := e.redeem(r.Receipt, r.Amount())
	if back > 0 {
		e.left.Add(back)
		e.deny = denial{}
	}
	if lost > 0 {
		s.obs.LeaseLost(e.policy.Rule, lost)
	}
}

// refundBacking passes refunds to the backing store. The tokens are back
// in the bucket: the keys' remembered denials no longer stand.
func (s *Store) refundBacking(ctx context.Context, pass []sluice.Refund) error {
	for i := range pass {
		if e := s.table.get(pass[i].Hit.Key); e != nil {
			e.mu.Lock()
			e.deny = denial{}
			e.mu.Unlock()
		}
	}
	if s.refunder == nil {
		return fmt.Errorf("lease: %w: the backing store %T gives nothing back", sluice.ErrInvalidHit, s.backing)
	}
	if err := s.refunder.Refund(ctx, pass); err != nil {
		s.refundFailed(pass)
		return err
	}
	return nil
}

// refundFailed tells the observer of refunds the backing store failed to
// take.
func (s *Store) refundFailed(refunds []sluice.Refund) {
	ro, ok := s.obs.(RefundObserver)
	if !ok {
		return
	}
	for i := range refunds {
		ro.RefundFailed(s.ruleOf(&refunds[i].Hit), 1)
	}
}

// ruleOf names h's rule for the observer.
func (s *Store) ruleOf(h *sluice.Hit) string {
	if p := s.policy(h); p != nil {
		return p.Rule
	}
	return ""
}

// Reset drops the leases of hits' buckets without giving their tokens
// back, and resets the buckets in the backing store (see
// [sluice.Resetter]), with the sub-buckets of a key its rule splits; a
// hot key is forgotten by its rule's detector (it cools; its traffic can
// make it hot again); over a backing store that is not a Resetter it is an
// error wrapping [sluice.ErrInvalidHit].
func (s *Store) Reset(ctx context.Context, hits []sluice.Hit) error {
	for i := range hits {
		if hits[i].Key == "" {
			return fmt.Errorf("lease: %w: empty key", sluice.ErrInvalidHit)
		}
	}
	rs, ok := s.backing.(sluice.Resetter)
	if !ok {
		return fmt.Errorf("lease: %w: the backing store %T cannot reset", sluice.ErrInvalidHit, s.backing)
	}
	if err := rs.Reset(ctx, s.withSubBuckets(hits)); err != nil {
		return err
	}
	for i := range hits {
		if pol := s.policy(&hits[i]); pol != nil {
			s.hot.Forget(pol, hits[i].Key)
		}
		s.refusals.Forget(hits[i].Key)
	}
	for i := range hits {
		if e := s.table.get(hits[i].Key); e != nil {
			e.mu.Lock()
			e.left.Store(0)
			e.expires.Store(0)
			e.gen.Store(s.gens.Add(1))
			e.epoch = e.gen.Load() + 1
			e.deny = denial{}
			e.takes = [maxTakes]take{}
			e.mu.Unlock()
		}
	}
	return nil
}

// withSubBuckets returns hits with, for each hit whose rule splits hot
// keys, the hits of its sub-buckets.
func (s *Store) withSubBuckets(hits []sluice.Hit) []sluice.Hit {
	out := hits
	for i := range hits {
		h := &hits[i]
		pol := s.policy(h)
		if pol == nil || pol.HotKeys.Split < 2 {
			continue
		}
		sub, ok := splitLimit(h.Limit, h.Algorithm, pol.HotKeys.Split, 1)
		if !ok {
			continue
		}
		if len(out) == len(hits) {
			out = append([]sluice.Hit(nil), hits...)
		}
		for _, k := range subKeys(h.Key, pol.HotKeys.Split) {
			sh := *h
			sh.Key, sh.Limit = k, sub
			out = append(out, sh)
		}
	}
	return out
}
