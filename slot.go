package sluice

import (
	"context"
	"fmt"
	"time"
)

// SlotRefresh asks a store to keep one concurrency slot held (see
// [Hit.Concurrency]) past its hold.
type SlotRefresh struct {
	// Hit is the concurrency hit as it was taken.
	Hit Hit
	// Receipt is the slot's receipt: the hit's Result.Receipt, or what
	// the last refresh left in it. RefreshSlots rewrites it to name the
	// refreshed slot; freeing the slot refunds that receipt.
	Receipt *Receipt
	// Held is how long the slot has been held since its receipt was last
	// written, by the caller's clock: since the take's answer arrived, or
	// since the last refresh was sent. Its hold restarts that much later.
	// Measured so, the new start is never ahead of the store's clock; a
	// refresh whose start would be is not applied. Positive.
	Held time.Duration
}

// SlotRefresher is an optional interface of a [Store]: it keeps the slots
// of long requests held, so that a request that runs longer than its
// rule's hold keeps its slot by refreshing it (every hold/3, say) while it
// runs. A slot no longer held (its hold ended, or it was freed) is left
// as it is, and its receipt is rewritten anyway: freeing it then frees
// nothing. A failure is a [*StoreError]; the receipts are rewritten
// whether or not the store applied them, so after an ambiguous failure
// the slot may stay held until its hold ends.
type SlotRefresher interface {
	Store
	// RefreshSlots restarts the hold of the slots refreshes name, each on
	// its own.
	RefreshSlots(ctx context.Context, refreshes []SlotRefresh) error
}

// CheckSlotRefreshes reports why a store cannot refresh refreshes, as an
// error wrapping [ErrInvalidHit], or nil. Stores call it first thing in
// RefreshSlots.
func CheckSlotRefreshes(refreshes []SlotRefresh) error {
	for i := range refreshes {
		r := &refreshes[i]
		if err := r.Hit.Check(); err != nil {
			return err
		}
		switch {
		case !r.Hit.Concurrency || r.Hit.Peek:
			return fmt.Errorf("%w: a refresh of a hit that took no slot", ErrInvalidHit)
		case r.Receipt == nil || r.Receipt.Taken != 1:
			return fmt.Errorf("%w: a refresh of a slot without its receipt", ErrInvalidHit)
		case r.Held <= 0:
			return fmt.Errorf("%w: a refresh of a slot held %v", ErrInvalidHit, r.Held)
		}
	}
	return nil
}

// NextMark returns the mark a refresh of r moves its slot to: the
// receipt's mark plus Held, in µs (the stores of this module mark a slot
// with the µs it was taken at, and keep its Seq).
func (r *SlotRefresh) NextMark() int64 { return r.Receipt.Mark + r.Held.Microseconds() }
