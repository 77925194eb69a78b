package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice"
)

var _ sluice.SlotRefresher = (*Store)(nil)

// RefreshSlots restarts the hold of concurrency slots (see
// [sluice.SlotRefresher]) in one call of the refund script (one per
// cluster slot, in one pipeline): each slot still held moves to its
// receipt's mark plus Held, and its key lives until the new hold ends. It
// is not retried: a failure is a [*sluice.StoreError], ambiguous when the
// script may have run.
func (s *Store) RefreshSlots(ctx context.Context, refreshes []sluice.SlotRefresh) error {
	if err := sluice.CheckSlotRefreshes(refreshes); err != nil {
		return fmt.Errorf("redisstore: %w", err)
	}
	if s.closed.Load() {
		return &sluice.StoreError{Op: "redisstore: refresh", Kind: sluice.ErrClosed}
	}
	if len(refreshes) == 0 {
		return nil
	}
	var err error
	if ctx.Err() != nil {
		for i := range refreshes { // the receipts are rewritten whatever happens
			refreshes[i].Receipt.Mark = refreshes[i].NextMark()
		}
		err = ctxError(ctx, false) // never sent
	} else {
		err = s.b.refresh(ctx, refreshes)
	}
	if se, ok := errors.AsType[*sluice.StoreError](err); ok {
		se.Op = "redisstore: refresh"
	}
	return err
}

func (n *node) refresh(ctx context.Context, refreshes []sluice.SlotRefresh) error {
	reply, err := n.scripts.send.one(ctx, "redisstore: refresh", n.scripts.refreshCommand(refreshes))
	if err != nil {
		return err
	}
	return decodeRefund(reply, len(refreshes))
}

// refresh restarts the hold of slots, grouped by the cluster slot of
// their buckets: one script call per cluster slot, in one pipeline.
func (cl *cluster) refresh(ctx context.Context, refreshes []sluice.SlotRefresh) error {
	u := cl.undo
	groups := groupBySlot(u, refreshes, func(r *sluice.SlotRefresh) *sluice.Hit { return &r.Hit }) // each Receipt still points at the caller's
	cmds := make([][]any, len(groups))
	for i, g := range groups {
		cmds[i] = u.scripts.refreshCommand(g)
	}
	replies, errs, _ := u.scripts.send.many(ctx, "redisstore: refresh", cmds)
	var failure error
	for i, g := range groups {
		if errs[i] == nil {
			errs[i] = decodeRefund(replies[i], len(g))
		}
		failure = worse(failure, errs[i])
	}
	return failure
}
