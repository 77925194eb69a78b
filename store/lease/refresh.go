package lease

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice"
)

var _ sluice.SlotRefresher = (*Store)(nil)

// RefreshSlots passes the refreshes of concurrency slots to the backing
// store, which holds the slots (see [sluice.SlotRefresher]). Over a
// backing store that is not a SlotRefresher it is an error wrapping
// [sluice.ErrInvalidHit]: its slots are freed after their hold.
func (s *Store) RefreshSlots(ctx context.Context, refreshes []sluice.SlotRefresh) error {
	if err := sluice.CheckSlotRefreshes(refreshes); err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	s.calls.RLock()
	defer s.calls.RUnlock()
	if s.closed.Load() {
		return errClosed()
	}
	rf, ok := s.backing.(sluice.SlotRefresher)
	if !ok {
		return fmt.Errorf("lease: %w: the backing store %T cannot refresh slots", sluice.ErrInvalidHit, s.backing)
	}
	return rf.RefreshSlots(ctx, refreshes)
}
