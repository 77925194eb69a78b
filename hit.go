package sluice

import (
	"fmt"
	"time"
)

// Hit asks a store to count one request against one bucket.
type Hit struct {
	// Key identifies the bucket. Stores treat it as opaque bytes; the
	// rules package builds it from the rule's name and the identity.
	Key string
	// Limit is the rate enforced on the bucket.
	Limit Limit
	// Algorithm selects how Limit is enforced.
	Algorithm Algorithm
	// Cost is how much the request consumes. 0 means 1, so a Hit filled
	// without a cost is limited like any other. Negative costs are refused.
	Cost int64
	// Peek reports the bucket's state as a hit of Cost would find it, and
	// consumes nothing. A peek never blocks the request it belongs to.
	Peek bool
	// MinCost, when positive, makes the hit partial: it takes as much as
	// the bucket holds, up to Cost, provided that is at least MinCost (a
	// local lease's refill takes up to K tokens this way). It passes when
	// MinCost would pass; the Result's Receipt.Taken says how much it took.
	// 0, the default, takes exactly Cost. At most Cost; not with Peek or
	// Force.
	MinCost int64
	// Shadow marks a dry-run hit: it never blocks the request, and its
	// bucket consumes only when it passed on its own.
	Shadow bool
	// Group, when not empty, asks a store that spreads buckets over shards
	// to keep this hit's bucket with every other bucket of the same Group,
	// so that a request's hits of one group are decided in one atomic call
	// (on Redis Cluster: one hash slot). Give it an identity shared by few
	// buckets, such as a user's: every bucket of a group lands on one shard.
	// It must be a function of Key. Stores that keep all buckets together
	// ignore it; in the Redis store it is part of the bucket's Redis key, so
	// setting or changing it starts new buckets.
	Group string
	// Force consumes Cost whether or not the hit passes, and never blocks
	// the other hits: an after-the-fact charge (such as one for the size of
	// a response) that may put the bucket into debt. The debt is bounded:
	// at most twice the capacity is ever owed.
	Force bool
	// Lease is the rule's local-lease policy, read by a lease store
	// (store/lease) and ignored by the others. nil: the lease store's
	// default. The rules package points it at the rule's policy.
	Lease *LeasePolicy
	// Block, when positive, is the hit's penalty: once the hit is refused
	// After times within its limit's period, every later hit on its bucket
	// is refused for Block (a blocked refusal, [Result.Blocked]), whatever
	// the bucket holds. The block lives with the bucket in the store, so
	// every instance sharing the store sees it, and resetting the bucket
	// lifts it. A forced hit neither counts nor is blocked. Not with
	// Shadow, MinCost or the sliding log algorithm; at most [MaxBlock].
	Block time.Duration
	// After is how many refusals within the limit's period start a block
	// (see Block); 0 means 1. Only with Block.
	After int64
	// Concurrency makes the hit take a slot of a concurrency limit instead
	// of a rate: at most Limit.Rate hits of the bucket hold a slot at once,
	// each for at most Limit.Period (the hold). The slot is freed by
	// refunding the hit's receipt
	// (see [Refunder]); a slot that is never freed, because its process
	// died, expires after the hold. Remaining is the number of free slots.
	// A refused hit's RetryAfter is at most [ConcurrencyRetry]: a slot can
	// be freed at any moment. It needs the [SlidingLog] algorithm (the
	// slots are a log of the hits holding them) and a cost of 1; not with
	// Shadow, Force, MinCost or a penalty.
	Concurrency bool
}

// ConcurrencyRetry is the longest RetryAfter of a refused concurrency hit
// (see [Hit.Concurrency]), and so the longest a store remembers such a
// refusal.
const ConcurrencyRetry = time.Second

// MaxBlock is the longest penalty a hit may carry (see [Hit.Block]).
const MaxBlock = 30 * 24 * time.Hour

// Refusals returns the number of refusals that start h's block: After, or
// 1 when After is 0.
func (h *Hit) Refusals() int64 {
	if h.After == 0 {
		return 1
	}
	return h.After
}

// Units returns the cost h is decided with: Cost, or 1 when Cost is 0.
func (h *Hit) Units() int64 {
	if h.Cost == 0 {
		return 1
	}
	return h.Cost
}

// Check reports whether h can be decided, as an error wrapping
// [ErrInvalidHit] or [ErrInvalidLimit], or nil. Stores call it for every
// hit; rules check their limits once, at construction.
func (h *Hit) Check() error {
	switch {
	case h.Cost < 0:
		return fmt.Errorf("%w: negative cost %d", ErrInvalidHit, h.Cost)
	case h.MinCost < 0:
		return fmt.Errorf("%w: negative minimum cost %d", ErrInvalidHit, h.MinCost)
	case h.MinCost > h.Units():
		return fmt.Errorf("%w: minimum cost %d above the cost %d", ErrInvalidHit, h.MinCost, h.Units())
	case h.MinCost > 0 && (h.Peek || h.Force):
		return fmt.Errorf("%w: a partial hit (MinCost) cannot be a peek or forced", ErrInvalidHit)
	case h.Peek && h.Force:
		return fmt.Errorf("%w: a hit cannot be both a peek and forced", ErrInvalidHit)
	case h.Key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidHit)
	case !h.Algorithm.Valid():
		return fmt.Errorf("%w: %v", ErrInvalidHit, h.Algorithm)
	}
	if err := h.checkPenalty(); err != nil {
		return err
	}
	if err := h.checkConcurrency(); err != nil {
		return err
	}
	// Stores receive hits from anywhere, so they cannot rely on the rules
	// package having validated the limit: an invalid one could divide by
	// zero or leave the range where Lua's doubles are exact.
	return h.Algorithm.ValidateLimit(h.Limit)
}

// checkPenalty reports why h's penalty (Block, After) cannot be decided.
func (h *Hit) checkPenalty() error {
	switch {
	case h.Block == 0 && h.After == 0:
		return nil
	case h.Block <= 0:
		return fmt.Errorf("%w: a penalty needs a positive block, got %v", ErrInvalidHit, h.Block)
	case h.Block > MaxBlock:
		return fmt.Errorf("%w: penalty block %v over %v", ErrInvalidHit, h.Block, MaxBlock)
	case h.Block < time.Microsecond:
		return fmt.Errorf("%w: penalty block %v under a microsecond", ErrInvalidHit, h.Block)
	case h.After < 0:
		return fmt.Errorf("%w: penalty after %d refusals: at least 1", ErrInvalidHit, h.After)
	case h.Shadow:
		return fmt.Errorf("%w: a shadow hit cannot carry a penalty", ErrInvalidHit)
	case h.MinCost > 0:
		return fmt.Errorf("%w: a partial hit (MinCost) cannot carry a penalty", ErrInvalidHit)
	case h.Algorithm == SlidingLog:
		return fmt.Errorf("%w: the sliding log cannot carry a penalty", ErrInvalidHit)
	}
	return nil
}

// checkConcurrency reports why h's concurrency slot cannot be decided.
func (h *Hit) checkConcurrency() error {
	switch {
	case !h.Concurrency:
		return nil
	case h.Algorithm != SlidingLog:
		return fmt.Errorf("%w: a concurrency hit needs the sliding log, got %v", ErrInvalidHit, h.Algorithm)
	case h.Units() != 1:
		return fmt.Errorf("%w: a concurrency hit takes one slot, not a cost of %d", ErrInvalidHit, h.Cost)
	case h.Shadow || h.Force || h.MinCost > 0 || h.Block > 0:
		return fmt.Errorf("%w: a concurrency hit cannot be shadow, forced, partial or carry a penalty", ErrInvalidHit)
	}
	return nil
}

// Result is a store's answer for one hit.
type Result struct {
	// Allowed reports whether this hit passed on its own. The request is
	// admitted only if every enforcing hit passed (see [Admitted]).
	Allowed bool
	// Limit is the limit the hit was decided against.
	Limit Limit
	// Remaining is how many units of cost would pass right now, after
	// this request's own consumption if the request was admitted.
	Remaining int64
	// ResetAfter is the time until the bucket is full again (until its
	// state is indistinguishable from a bucket never used).
	ResetAfter time.Duration
	// RetryAfter is, for a hit that did not pass, the time until this
	// request, with its cost, would pass. It is 0 for a hit that passed and
	// for one that can never pass.
	RetryAfter time.Duration
	// Unsatisfiable reports that the request's cost exceeds the capacity:
	// it can never pass, however long the client waits.
	Unsatisfiable bool
	// Receipt records what the hit consumed, so that the store can give it
	// back. Stores that implement [Refunder] fill it; it is zero for a hit
	// that consumed nothing and for a forced hit.
	Receipt Receipt
	// Remembered reports that the store answered the call without deciding
	// it, from its memory of an earlier refusal (stores behind a network
	// remember the buckets they refused; see the Redis and lease stores'
	// Config.RememberRefusals). A hit that did not pass is the remembered
	// refusal: RetryAfter and ResetAfter count down from when it was
	// decided (for the window algorithms, Remaining is what was left
	// then). Every other hit of such a call is undecided: Allowed is true,
	// nothing was consumed, and Remaining and ResetAfter are what is known
	// of its bucket from what the store last said of it (see
	// [BucketState]: counted forward to now, others' takes since then not
	// in it), or 0 when the store keeps no record of it (never decided
	// here, or evicted from its bounded record). A call with a shadow hit,
	// a peek or a forced hit is always decided by the store.
	Remembered bool
	// Blocked reports that the hit was refused by its penalty (see
	// [Hit.Block]): this refusal started a block, or one was running.
	// RetryAfter is then the time left in the block.
	Blocked bool
	// BlockStarted reports that this refusal started the block (Blocked is
	// then set too, and RetryAfter is the whole block).
	BlockStarted bool
}

// CheckHits reports why a store cannot decide hits into out, or nil: too
// few result slots, an invalid hit (see [Hit.Check]), or forced and
// unforced hits mixed in one call (an after-the-fact charge is a call of
// its own). Stores call it first thing in Take.
func CheckHits(hits []Hit, out []Result) error {
	if len(out) < len(hits) {
		return fmt.Errorf("%w: %d results for %d hits", ErrInvalidHit, len(out), len(hits))
	}
	for i := range hits {
		if err := hits[i].Check(); err != nil {
			return err
		}
		if hits[i].Force != hits[0].Force {
			return fmt.Errorf("%w: forced and unforced hits in one call", ErrInvalidHit)
		}
	}
	return nil
}
