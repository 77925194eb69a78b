package lease

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice"
)

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
	now := s.micros()
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
	if lost := e.refund(now, r.Receipt, r.Amount()); lost > 0 {
		s.obs.LeaseLost(e.policy.Rule, lost)
	}
}

// refundBacking passes refunds to the backing store. The tokens are back
// in the bucket: the keys' remembered denials no longer stand.
func (s *Store) refundBacking(ctx context.Context, pass []sluice.Refund) error {
	for i := range pass {
		if e := s.table.get(pass[i].Hit.Key); e != nil {
			e.refunded(pass[i].Amount())
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
