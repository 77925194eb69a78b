package memstore

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/algo"
)

var (
	_ sluice.Refunder = (*Store)(nil)
	_ sluice.Resetter = (*Store)(nil)
)

// Refund gives back what hits took, exactly (see [sluice.Refunder]). It
// does no I/O and ignores ctx.
func (s *Store) Refund(_ context.Context, refunds []sluice.Refund) error {
	if err := sluice.CheckRefunds(refunds); err != nil {
		return fmt.Errorf("memstore: %w", err)
	}
	if s.closed.Load() {
		return errClosed()
	}
	now := s.now()
	for i := range refunds {
		r := &refunds[i]
		units, rc := r.Amount(), r.Receipt
		s.update(&r.Hit, func(tat int64) int64 {
			next, _ := algo.RefundTokenBucket(now, tat, rc.Mark, units, r.Hit.Limit.IntervalMicros())
			return next
		}, func(st *state) {
			switch r.Hit.Algorithm {
			case sluice.FixedWindow:
				st.b, _ = algo.RefundFixedWindow(st.a, st.b, rc.Mark, units)
			case sluice.SlidingWindow:
				st.b, st.c, _ = algo.RefundSlidingWindow(st.a, st.b, st.c, rc.Mark, units)
			case sluice.SlidingLog:
				if st.log != nil {
					st.log.entries, _ = algo.RefundSlidingLog(st.log.entries, rc.Mark, rc.Seq, units)
				}
			}
		})
	}
	return nil
}

// Reset forgets the buckets of hits: each is full again (see
// [sluice.Resetter]). It does no I/O and ignores ctx.
func (s *Store) Reset(_ context.Context, hits []sluice.Hit) error {
	for i := range hits {
		if err := hits[i].Check(); err != nil {
			return fmt.Errorf("memstore: %w", err)
		}
	}
	if s.closed.Load() {
		return errClosed()
	}
	for i := range hits {
		s.update(&hits[i], func(int64) int64 { return 0 }, func(st *state) { *st = state{} })
		s.resetPenalty(&hits[i])
	}
	return nil
}

// update changes the bucket of h in place, if it exists: a token bucket's
// arrival time by tb, a window bucket's state by win. A bucket the sweeper
// forgot was full: there is nothing to change.
func (s *Store) update(h *sluice.Hit, tb func(tat int64) int64, win func(st *state)) {
	if h.Algorithm == sluice.TokenBucket {
		if b := s.table.tokenBucket(h, false, false); b != nil {
			b.updateToken(tb)
		}
		return
	}
	b := s.table.bucket(makeKey(h), false, false)
	if b == nil {
		return
	}
	b.mu.Lock()
	if !b.dead {
		win(b.win)
	}
	b.mu.Unlock()
}

// updateToken sets a token bucket's arrival time to f of it, with a
// compare-and-swap, waiting for a caller that froze it.
func (b *bucket) updateToken(f func(tat int64) int64) {
	for {
		tat := b.tat.Load()
		switch tat {
		case tatDead:
			return
		case tatFrozen:
			b.mu.Lock()
			b.updateToken(f)
			b.mu.Unlock()
			return
		}
		if next := f(tat); next == tat || b.tat.CompareAndSwap(tat, next) {
			return
		}
	}
}

var _ sluice.SlotRefresher = (*Store)(nil)

// RefreshSlots restarts the hold of concurrency slots (see
// [sluice.SlotRefresher]): each slot still held moves to its receipt's
// mark plus Held, unless that is ahead of the store's clock. It does no
// I/O and ignores ctx.
func (s *Store) RefreshSlots(_ context.Context, refreshes []sluice.SlotRefresh) error {
	if err := sluice.CheckSlotRefreshes(refreshes); err != nil {
		return fmt.Errorf("memstore: %w", err)
	}
	if s.closed.Load() {
		return errClosed()
	}
	now := s.now()
	for i := range refreshes {
		r := &refreshes[i]
		rc, next := *r.Receipt, r.NextMark()
		r.Receipt.Mark = next
		s.update(&r.Hit, func(tat int64) int64 { return tat }, func(st *state) {
			if st.log == nil {
				return
			}
			p := r.Hit.Limit.PeriodMicros()
			for j, e := range st.log.entries {
				if e.TS == rc.Mark && e.Seq == rc.Seq && e.TS > now-p && next > e.TS && next <= now {
					st.log.entries = algo.Insert(append(st.log.entries[:j], st.log.entries[j+1:]...), algo.Entry{TS: next, Cost: e.Cost, Seq: e.Seq})
					st.expires = max(st.expires, next+p)
					return
				}
			}
		})
	}
	return nil
}
