package sluice

import (
	"context"
	"fmt"
)

// Receipt records what one hit consumed, so that the store that decided it
// can give it back exactly (see [Refunder]). Callers copy receipts and hand
// them back; only Taken is theirs to read.
type Receipt struct {
	// Taken is how much the hit consumed: its cost, or what a partial hit
	// ([Hit.MinCost]) took. 0 for a hit that consumed nothing.
	Taken int64
	// Mark and Seq locate the consumption in the bucket's state, in the
	// deciding store's terms (for the stores of this module: the token
	// bucket's arrival time after the take, a window's index, or a sliding
	// log entry's time and sequence number).
	Mark, Seq int64
}

// Refund asks a store to give back what one hit took.
type Refund struct {
	// Hit is the hit as it was taken: its Key, Limit and Algorithm name
	// the bucket.
	Hit Hit
	// Receipt is the hit's Result.Receipt.
	Receipt Receipt
	// Units is how much to give back: from 1 to Receipt.Taken. 0 means
	// all of it.
	Units int64
}

// Refunder is an optional interface of a [Store]: it gives back what hits
// took, as if they had taken less. Cross-slot requests on Redis Cluster and
// local leases use it to keep requests all-or-nothing.
//
// A refund is exact: it never gives back more than the take still holds in
// the bucket. Once the bucket has refilled past the take (its tokens would
// have come back anyway, or its window has passed) it gives back only what
// is left of it, or nothing. So a refund can leave a bucket with less than
// if the take had never happened (briefly under-admitting), never with
// more.
//
// Give a receipt back once. A store need not remember the receipts it has
// honoured: the memory and Redis stores of this module do not, and a
// second refund of the same receipt may give its tokens back again, as
// long as the bucket still holds that many taken (never beyond full). The
// local lease store (store/lease) does remember, and gives a receipt's
// tokens back at most once.
//
// Refund decides refunds independently: each is applied or not on its
// own. A refund of a peek, a forced hit, or a hit whose receipt took
// nothing is an error wrapping [ErrInvalidHit], as is Units outside 0 to
// Receipt.Taken; nothing is given back then. A failure of the store
// itself is a [*StoreError]; when it is ambiguous the refund may have been
// applied. Never retry a failed refund: a retry can give back twice.
// Count and log the failure: it loses at most what the refund was for.
type Refunder interface {
	Store
	// Refund gives back what refunds name, each on its own.
	Refund(ctx context.Context, refunds []Refund) error
}

// Resetter is an optional interface of a [Store]: operator controls.
// Together with peeks it is a store's "inspect and reset" capability: to
// read a bucket's state without consuming, take it with a peek
// ([Hit.Peek]), which every store supports; to unblock it, Reset it.
// [Limiter.Peek] and [Limiter.Reset] do both for one key, and the
// rules/admin package for a rule and an identity as an operator types it.
type Resetter interface {
	Store
	// Reset forgets the buckets of hits: each is full again, as if never
	// used. It reads only each hit's Key, Algorithm and Limit (the period
	// of a window algorithm is part of its bucket). Resetting a bucket that
	// does not exist does nothing.
	Reset(ctx context.Context, hits []Hit) error
}

// CheckRefunds reports why a store cannot apply refunds, as an error
// wrapping [ErrInvalidHit] or [ErrInvalidLimit], or nil. Stores call it
// first thing in Refund.
func CheckRefunds(refunds []Refund) error {
	for i := range refunds {
		r := &refunds[i]
		if err := r.Hit.Check(); err != nil {
			return err
		}
		switch {
		case r.Hit.Peek || r.Hit.Force:
			return fmt.Errorf("%w: refund of a peek or a forced hit", ErrInvalidHit)
		case r.Receipt.Taken <= 0:
			return fmt.Errorf("%w: refund of a hit that took nothing", ErrInvalidHit)
		case r.Units < 0 || r.Units > r.Receipt.Taken:
			return fmt.Errorf("%w: refund of %d units from a take of %d", ErrInvalidHit, r.Units, r.Receipt.Taken)
		}
	}
	return nil
}

// Amount returns the units r gives back: Units, or all of the take when
// Units is 0.
func (r Refund) Amount() int64 {
	if r.Units == 0 {
		return r.Receipt.Taken
	}
	return r.Units
}
