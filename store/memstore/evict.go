package memstore

import (
	"sync"
	"sync/atomic"
)

// evictor makes room when the store holds MaxBuckets buckets. It works on
// one segment of the table at a time (a shard of strTable or one of the
// sync.Maps), going round them in turn, and in each it forgets the
// buckets that are full again and, among the others, the eighth closest to
// being full again: what an evicted bucket forgives is what it would have
// given back soonest anyway. One pass frees many slots at once, so the
// cost of a pass is spread over the many buckets created after it.
//
// A bucket created but not yet decided (its state still zero) is not
// evicted in the pass that follows its creation, so that the caller that
// created it gets to use it: otherwise, with a small bound, callers could
// evict each other's new buckets for ever.
type evictor struct {
	mu      sync.Mutex
	hand    int     // the next segment to evict from
	mark    uint64  // the table's ids when the previous pass began
	scratch []int64 // expiries, reused
	total   atomic.Uint64
	events  Events
}

// evictFraction is the part of a segment's buckets one pass evicts, at the
// least, when none is full again.
const evictFraction = 8

// makeRoom evicts until the table holds fewer buckets than its bound, or
// until every segment has been visited twice with nothing to evict (the
// buckets all in use or new: the bound is then exceeded by them, briefly).
// Callers that need room at the same time wait for one pass.
func (s *Store) makeRoom() {
	e := &s.evict
	c := &s.table.c
	e.mu.Lock()
	defer e.mu.Unlock()
	if c.live.Load() < c.max {
		return // another caller made room
	}
	protect := e.mark
	e.mark = c.ids.Load()
	now := s.now()
	n := 0
	for range 2 * numSegments {
		if c.live.Load() < c.max {
			break
		}
		n += s.evictSegment(e.hand, now, protect)
		e.hand = (e.hand + 1) % numSegments
	}
	if n > 0 {
		e.total.Add(uint64(n))
		if e.events != nil {
			e.events.BucketsEvicted(n)
		}
	}
}

// evictSegment forgets segment i's buckets that are full at now and, if
// fewer than an eighth of them are, the eighth (at least one) closest to
// being full again. Buckets created after protect and never decided are
// kept. It returns how many it forgot. The caller holds s.evict.mu.
func (s *Store) evictSegment(i int, now int64, protect uint64) int {
	e := &s.evict
	exp := e.scratch[:0]
	collect := func(x int64, id uint64) {
		if x != 0 || id <= protect {
			exp = append(exp, x)
		}
	}
	if i < strShards {
		// Token buckets only: their expiry is their arrival time, read
		// without a lock (a frozen or dead one reads below any time).
		s.table.tb.peek(i, func(b *bucket) {
			if tat := b.tat.Load(); tat >= 0 {
				collect(tat, b.id)
			}
		})
	} else {
		s.table.visit(i, func(b *bucket) bool {
			collect(b.expiry(), b.id)
			return false
		})
	}
	e.scratch = exp
	if len(exp) == 0 {
		return 0
	}
	k := max(1, len(exp)/evictFraction)
	by := max(now, kthSmallest(exp, k-1))
	return s.table.visit(i, func(b *bucket) bool {
		if b.expiry() == 0 && b.id > protect {
			return false
		}
		return b.full(by)
	})
}

// expiry returns when b becomes indistinguishable from a bucket never used,
// in Unix microseconds (0 for a bucket never decided). The caller holds
// b's lock.
func (b *bucket) expiry() int64 {
	if b.win != nil {
		return b.win.expires
	}
	return b.tat.Load()
}

// Evicted returns how many buckets the store has evicted to stay within
// MaxBuckets since [New].
func (s *Store) Evicted() uint64 { return s.evict.total.Load() }
