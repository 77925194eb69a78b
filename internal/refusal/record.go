package refusal

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
)

// DefaultRecordSize is how many buckets a Record holds at most.
const DefaultRecordSize = 16384

// epoch is the origin of the package's default clock, shared by every
// Memory and Record on it, so that one's readings are the other's.
var epoch = time.Now()

// monotonic is the default clock: nanoseconds since epoch.
func monotonic() int64 { return int64(time.Since(epoch)) }

// Record keeps what a store last said about each bucket it decided:
// remaining, when it is full again, refused or not, and when. It is a fixed
// table of slots, two candidates a bucket, written in place under a lock
// of each slot's own, so recording allocates nothing and a flood of
// distinct keys never grows it: it replaces the oldest entry of a pair.
// An evicted bucket is simply not known. A nil *Record records nothing.
type Record struct {
	slots []recSlot
	mask  uint64
	seed  maphash.Seed // slot index and Forget's key hash
	id    maphash.Seed // the bucket's identity: key, group, limit, algorithm
	now   func() int64
}

// recSlot is one bucket's record. kh 0 is an empty slot.
type recSlot struct {
	mu sync.Mutex
	kh uint64
	id uint64
	said
}

// said is what the store said about a bucket, on the record's clock.
type said struct {
	remaining int64
	resetAt   int64 // when the bucket is full again
	retryAt   int64 // when a refused hit would pass
	at        int64 // when the call that said it was sent
	refused   bool
	unsat     bool
	claimed   bool // handed to a local fallback already
}

// NewRecord returns a record of size buckets (0: DefaultRecordSize) on
// now, a monotonic clock in nanoseconds (nil: the package's, which a
// Memory made with a nil clock shares).
func NewRecord(size int, now func() int64) *Record {
	if size <= 0 {
		size = DefaultRecordSize
	}
	n := 2
	for n < size {
		n <<= 1
	}
	if now == nil {
		now = monotonic
	}
	return &Record{slots: make([]recSlot, n), mask: uint64(n - 1), seed: maphash.MakeSeed(), id: maphash.MakeSeed(), now: now}
}

// Now returns the record's clock: read it before sending a call whose
// answers are to be recorded, and pass it to Note.
func (r *Record) Now() int64 {
	if r == nil {
		return monotonic()
	}
	return r.now()
}

// Len returns how many buckets r can hold.
func (r *Record) Len() int {
	if r == nil {
		return 0
	}
	return len(r.slots)
}

// keyHash returns key's slot hash, never 0 (an empty slot's).
func (r *Record) keyHash(key string) uint64 { return maphash.String(r.seed, key) | 1 }

// identity returns the hash telling h's bucket apart: the same key with
// another group, limit or algorithm is another bucket.
func (r *Record) identity(h *sluice.Hit) uint64 {
	x := maphash.String(r.id, h.Key)
	if h.Group != "" {
		x ^= mix(maphash.String(r.id, h.Group))
	}
	x = mix(x ^ uint64(h.Limit.Rate))
	x = mix(x ^ uint64(h.Limit.Period))
	x = mix(x ^ uint64(h.Limit.Burst))
	return mix(x ^ uint64(h.Algorithm))
}

// mix is splitmix64's finalizer.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// Note records the answers in out to hits, decided by a call sent at sent
// (a reading of Now taken before it was sent). Results answered from
// memory and results left zero (the failed hits of a partial failure) say
// nothing new and are skipped. A later hit on the bucket of an earlier one
// of the same call overwrites it: it was decided after it.
func (r *Record) Note(hits []sluice.Hit, out []sluice.Result, sent int64) {
	if r == nil {
		return
	}
	for i := range hits {
		h, res := &hits[i], &out[i]
		if res.Remembered || res.Limit == (sluice.Limit{}) {
			continue
		}
		s := said{remaining: res.Remaining, resetAt: sent + int64(res.ResetAfter), at: sent, refused: !res.Allowed, unsat: res.Unsatisfiable}
		if s.refused {
			s.retryAt = sent + int64(res.RetryAfter)
		}
		r.put(r.keyHash(h.Key), r.identity(h), s)
	}
}

// put writes s as bucket id's record: in the slot already holding it, or
// an empty one, or else the one said longest ago. A call sent before the
// recorded one's does not overwrite it.
func (r *Record) put(kh, id uint64, s said) {
	i := kh & r.mask
	a, b := &r.slots[i], &r.slots[i^1]
	for _, sl := range [2]*recSlot{a, b} {
		sl.mu.Lock()
		if sl.kh == kh && sl.id == id {
			if s.at >= sl.at {
				sl.said = s
			}
			sl.mu.Unlock()
			return
		}
		sl.mu.Unlock()
	}
	a.mu.Lock()
	aAt, aEmpty := a.at, a.kh == 0
	a.mu.Unlock()
	sl := a
	if !aEmpty {
		b.mu.Lock()
		if b.kh == 0 || b.at < aAt {
			sl = b
		}
		b.mu.Unlock()
	}
	sl.mu.Lock()
	sl.kh, sl.id, sl.said = kh, id, s
	sl.mu.Unlock()
	// Two calls recording a new bucket at once may each have taken a
	// slot: keep the newer.
	other := a
	if sl == a {
		other = b
	}
	other.mu.Lock()
	if other.kh == kh && other.id == id && other.at <= s.at {
		other.kh, other.id, other.said = 0, 0, said{}
	}
	other.mu.Unlock()
}

// find returns the slot holding h's bucket, locked, or nil.
func (r *Record) find(h *sluice.Hit) *recSlot {
	kh, id := r.keyHash(h.Key), r.identity(h)
	i := kh & r.mask
	for _, j := range [2]uint64{i, i ^ 1} {
		sl := &r.slots[j]
		sl.mu.Lock()
		if sl.kh == kh && sl.id == id {
			return sl
		}
		sl.mu.Unlock()
	}
	return nil
}

// Known returns what is known of h's bucket at now, on the record's
// clock, from what the store last said (counted forward: a token bucket's
// refill, a window's reset), and false when nothing is.
func (r *Record) Known(h *sluice.Hit, now int64) (sluice.BucketState, bool) {
	if r == nil {
		return sluice.BucketState{}, false
	}
	sl := r.find(h)
	if sl == nil {
		return sluice.BucketState{}, false
	}
	s := sl.said
	sl.mu.Unlock()
	return s.state(h, now), true
}

// Claim returns what is known of h's bucket now, as Known does, but only
// once for each thing the store said: a local fallback seeds its bucket
// from it once, then counts on its own until the store says more.
func (r *Record) Claim(h *sluice.Hit) (sluice.BucketState, bool) {
	if r == nil {
		return sluice.BucketState{}, false
	}
	now := r.now()
	sl := r.find(h)
	if sl == nil {
		return sluice.BucketState{}, false
	}
	s := sl.said
	claimed := sl.claimed
	sl.claimed = true
	sl.mu.Unlock()
	if claimed {
		return sluice.BucketState{}, false
	}
	return s.state(h, now), true
}

// state returns what s tells of h's bucket at now. Remaining is counted
// forward: a token bucket refills exactly as the time passed says (nothing
// else but other instances' takes, which only lower it, has changed it);
// a window's bucket is full once its reset has passed, and until then
// holds at least what it held.
func (s *said) state(h *sluice.Hit, now int64) sluice.BucketState {
	reset := max(s.resetAt-now, 0)
	st := sluice.BucketState{
		Remaining:     s.remaining,
		ResetAfter:    time.Duration(reset),
		Refused:       s.refused,
		Unsatisfiable: s.unsat,
		Age:           time.Duration(max(now-s.at, 0)),
	}
	if s.refused && !s.unsat {
		st.RetryAfter = time.Duration(max(s.retryAt-now, 0))
	}
	capacity := h.Limit.Capacity()
	switch {
	case reset == 0:
		st.Remaining = capacity
	case h.Algorithm == sluice.TokenBucket:
		interval := h.Limit.IntervalMicros()
		if slack := capacity*interval - (reset+999)/1000; slack > 0 {
			st.Remaining = max(st.Remaining, slack/interval)
		}
	}
	st.Remaining = min(max(st.Remaining, 0), capacity)
	return st
}

// Forget drops what is recorded of key's buckets: a refund or a reset
// gave tokens back.
func (r *Record) Forget(key string) {
	if r == nil {
		return
	}
	kh := r.keyHash(key)
	i := kh & r.mask
	for _, j := range [2]uint64{i, i ^ 1} {
		sl := &r.slots[j]
		sl.mu.Lock()
		if sl.kh == kh {
			sl.kh, sl.id, sl.said = 0, 0, said{}
		}
		sl.mu.Unlock()
	}
}
