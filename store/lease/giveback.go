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
		if !e.mu.TryLock() {
			return false // busy: a refill or a return is under way
		}
		defer e.mu.Unlock()
		if e.refilling != nil {
			return false
		}
		exp := e.expires.Load()
		if !all && e.live(now) {
			return false
		}
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
		s.refunds.Add(int64(len(refunds)))
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
// from a lease goes back into the lease, if it is still the one the hit
// was served from and has not expired (otherwise its tokens went back, or
// were lost, with the lease, and the refund does nothing). Other refunds go
// to the backing store; over a backing store that is not a Refunder they
// are an error wrapping [sluice.ErrInvalidHit].
func (s *Store) Refund(ctx context.Context, refunds []sluice.Refund) error {
	if err := sluice.CheckRefunds(refunds); err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	if s.closed.Load() {
		return errClosed()
	}
	now := s.now()
	var pass []sluice.Refund
	for i := range refunds {
		r := &refunds[i]
		if r.Receipt.Seq != localSeq {
			pass = append(pass, *r)
			continue
		}
		e := s.table.get(r.Hit.Key)
		if e == nil {
			continue
		}
		e.mu.Lock()
		if e.gen.Load() == r.Receipt.Mark && now < e.expires.Load() {
			e.left.Add(r.Amount())
		}
		e.mu.Unlock()
	}
	if len(pass) == 0 {
		return nil
	}
	if s.refunder == nil {
		return fmt.Errorf("lease: %w: the backing store %T gives nothing back", sluice.ErrInvalidHit, s.backing)
	}
	return s.refunder.Refund(ctx, pass)
}

// Reset drops the leases of hits' buckets without giving their tokens
// back, and resets the buckets in the backing store (see
// [sluice.Resetter]); over a backing store that is not a Resetter it is an
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
	if err := rs.Reset(ctx, hits); err != nil {
		return err
	}
	for i := range hits {
		if e := s.table.get(hits[i].Key); e != nil {
			e.mu.Lock()
			e.left.Store(0)
			e.expires.Store(0)
			e.gen.Add(1)
			e.deny = denial{}
			e.takes = [maxTakes]take{}
			e.mu.Unlock()
		}
	}
	return nil
}
