package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice"
)

var _ sluice.Refunder = (*Store)(nil)

// Refund gives back what takes consumed, exactly (see [sluice.Refunder]),
// in one call of the refund script: each refund on its own, in order, by
// the rules of the memory store (internal/algo): a token bucket gets back
// at most what the take still holds, a window only while the take's window
// is the current or (sliding) the previous one, a sliding log shrinks or
// removes the entry the take added. It is never retried: a failure is a
// [*sluice.StoreError], ambiguous when the script may have run.
func (s *Store) Refund(ctx context.Context, refunds []sluice.Refund) error {
	if err := sluice.CheckRefunds(refunds); err != nil {
		return fmt.Errorf("redisstore: %w", err)
	}
	if s.closed.Load() {
		return &sluice.StoreError{Op: "redisstore: refund", Kind: sluice.ErrClosed}
	}
	if len(refunds) == 0 {
		return nil
	}
	for i := range refunds { // tokens come back: what was refused may pass
		s.refusals.Forget(refunds[i].Hit.Key)
		s.record.Forget(refunds[i].Hit.Key)
	}
	var err error
	if ctx.Err() != nil {
		err = ctxError(ctx, false) // never sent
	} else {
		err = s.b.refund(ctx, refunds)
	}
	var se *sluice.StoreError
	if errors.As(err, &se) {
		se.Op = "redisstore: refund"
	}
	return err
}

var _ sluice.Resetter = (*Store)(nil)

// Reset forgets the buckets of hits, whatever their algorithm, with one
// DEL: each is full again (see [sluice.Resetter]). A failure is a
// [*sluice.StoreError]; retrying it is harmless.
func (s *Store) Reset(ctx context.Context, hits []sluice.Hit) error {
	for i := range hits {
		if err := hits[i].Check(); err != nil {
			return fmt.Errorf("redisstore: %w", err)
		}
	}
	if s.closed.Load() {
		return &sluice.StoreError{Op: "redisstore: reset", Kind: sluice.ErrClosed}
	}
	if len(hits) == 0 {
		return nil
	}
	// The buckets are full again: forget their refusals, also those of
	// calls sent before the reset and answered while it ran.
	defer func() {
		for i := range hits {
			s.refusals.Forget(hits[i].Key)
			s.record.Forget(hits[i].Key)
		}
	}()
	return s.b.reset(ctx, hits)
}
