package redisstore

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
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
	if s.cluster != nil {
		return s.cluster.reset(ctx, hits)
	}
	cmd := make([]any, 0, 1+len(hits))
	cmd = append(cmd, "del")
	for i := range hits {
		cmd = append(cmd, s.keys.key(&hits[i]))
	}
	c := redis.NewCmd(ctx, cmd...)
	_ = s.client.Process(ctx, c)
	if err := c.Err(); err != nil {
		return classify("redisstore: reset", err)
	}
	return nil
}
