package lease

import "github.com/sluicehq/sluice"

// What the store knows of a bucket without asking the backing store: what
// it last answered for it (its record, kept as the Redis store keeps its
// own), and, for a leased bucket, the lease's view (the tokens held plus
// what the backing bucket held at the last refill, counted forward). Both
// are upper bounds of what the bucket holds for this process (others'
// takes since are in neither), so the lower is the better.

var _ sluice.BucketRecorder = (*Store)(nil)

// ClaimBucket returns what the store last said about h's bucket, once
// (see [sluice.BucketRecorder]): counted forward to now, and no more than
// the lease of h's key holds and saw of the backing bucket at its last
// refill. It keeps the last 16,384 buckets it decided through the backing
// store, or about; a bucket served only from its lease since is known by
// the lease. Over an in-process backing store nothing is recorded.
func (s *Store) ClaimBucket(h *sluice.Hit) (sluice.BucketState, bool) {
	st, ok := s.record.Claim(h)
	if !ok {
		return st, false
	}
	if ls, ok := s.leaseState(h, s.micros()); ok && ls.Remaining < st.Remaining {
		st.Remaining, st.ResetAfter = ls.Remaining, ls.ResetAfter
	}
	return st, true
}

// fillKnown writes into the undecided results of a call answered from the
// memory of refusals (out, for hits) what the lease of each hit's key
// knows of its bucket, when that is less than what the record said (or
// the record had nothing). It allocates nothing.
func (s *Store) fillKnown(hits []sluice.Hit, out []sluice.Result) {
	var now int64
	read := false
	for i := range hits {
		r := &out[i]
		if !r.Allowed {
			continue // the remembered refusal itself
		}
		if !read {
			now, read = s.micros(), true
		}
		ls, ok := s.leaseState(&hits[i], now)
		if !ok {
			continue
		}
		unknown := r.Remaining == 0 && r.ResetAfter == 0 // a known bucket with nothing left is not full
		if unknown || ls.Remaining < r.Remaining {
			r.Remaining, r.ResetAfter = ls.Remaining, ls.ResetAfter
		}
	}
}

// leaseState returns what the lease of h's key knows of h's bucket at now
// (µs): the tokens it holds plus what the backing bucket held at its last
// refill, counted forward (see [entry.report]); false when the key has no
// lease of h's limit and algorithm that was ever refilled.
func (s *Store) leaseState(h *sluice.Hit, now int64) (sluice.BucketState, bool) {
	e := s.table.get(h.Key)
	if e == nil || e.limit != h.Limit || e.alg != h.Algorithm || e.fullAt.Load() == 0 {
		return sluice.BucketState{}, false
	}
	left := max(e.left.Load(), 0)
	if e.interval == 0 && now >= e.expires.Load() {
		left = 0 // a fixed window's tokens of a past window, or gone back with their lease
	}
	var r sluice.Result
	e.report(now, left, &r)
	if r.ResetAfter == 0 {
		r.Remaining = h.Limit.Capacity() // full again
	}
	return sluice.BucketState{Remaining: r.Remaining, ResetAfter: r.ResetAfter}, true
}
