package sluice

import "time"

// BucketState is what a store last said about one bucket, counted forward
// to when it is read: see [BucketRecorder].
type BucketState struct {
	// Remaining is how many units of cost the bucket held when the store
	// said it, counted forward: a token bucket's refill since then, a
	// window's reset once it has passed. Others' takes since then are not
	// in it.
	Remaining int64
	// ResetAfter is the time left until the bucket is full again.
	ResetAfter time.Duration
	// Refused reports that the hit the store last decided on the bucket
	// did not pass; RetryAfter is then the time left until it would.
	Refused    bool
	RetryAfter time.Duration
	// Unsatisfiable reports that the refused hit's cost exceeded the
	// capacity.
	Unsatisfiable bool
	// Age is how long ago the call that said it was sent.
	Age time.Duration
}

// BucketRecorder is an optional interface of a [Store] behind a network,
// such as the Redis store: it keeps, in a bounded table, what it last said
// about each bucket it decided, so that a caller deciding without it (the
// local fallback of rules.FailLocal) starts a bucket where the store left
// it rather than full. A bucket evicted from the table, or never decided,
// is not known.
type BucketRecorder interface {
	Store
	// ClaimBucket returns what the store last said about h's bucket (the
	// bucket of h's key, group, limit and algorithm), and true the first
	// time it is asked after the store said it; false when nothing is
	// known, or when it was claimed already: the claimer counts on its own
	// until the store says more.
	ClaimBucket(h *Hit) (BucketState, bool)
}
