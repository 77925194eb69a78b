package redisstore

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice"
)

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
		}
	}()
	return s.b.reset(ctx, hits)
}
