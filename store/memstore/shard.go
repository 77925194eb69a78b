package memstore

import (
	"crypto/sha256"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/algo"
)

// maxKeyLen is the longest key stored as it is; longer keys are stored as
// their SHA-256 digest.
const maxKeyLen = 128

// bucketKey identifies one bucket: a short key as it is, or a long key's
// digest, under one algorithm. Exactly one of short and long is set.
//
// The window algorithms' state means something only for one window length,
// so for them the period is part of the bucket: a rule whose period changes
// starts new buckets (as in the Redis store); for a calendar limit, its
// calendar and its zone.
type bucketKey struct {
	short  string
	long   *[sha256.Size]byte
	alg    sluice.Algorithm
	period int64 // window algorithms only
}

func makeKey(h *sluice.Hit) bucketKey {
	k := bucketKey{alg: h.Algorithm}
	if h.Algorithm != sluice.TokenBucket {
		k.period = h.Limit.PeriodMicros()
		if c := h.Limit.Calendar; c != sluice.NoCalendar {
			// A calendar's windows are not its nominal period's, and
			// a count means something only in its zone's periods.
			k.period = -(zoneID(h.Limit.Location())<<3 | int64(c))
		}
	}
	if len(h.Key) <= maxKeyLen {
		k.short = h.Key
		return k
	}
	sum := sha256.Sum256([]byte(h.Key))
	k.long = &sum
	return k
}

// shortKey and longKey are the map keys of window buckets whose keys are
// short enough to keep, and of buckets stored as a digest.
type shortKey struct {
	s      string
	period int64
}

type longKey struct {
	sum    [sha256.Size]byte
	alg    sluice.Algorithm
	period int64
}

// state is one bucket's stored state. The meaning of a, b and c depends on
// the algorithm (token bucket: a is the arrival time; windows: a is the
// window index, b and c counts); expires is when the state becomes
// indistinguishable from a bucket never used, in Unix microseconds. A
// sliding log keeps its entries in log; the other algorithms leave it nil,
// so their state is four integers, cheap to copy.
type state struct {
	a, b, c int64
	expires int64
	log     *logState
}

// logState is a sliding log's entries. A decision that adds one carries it
// in pend until it is written.
type logState struct {
	entries []algo.Entry
	period  int64 // the window, for pruning
	pend    algo.Entry
	hasPend bool
}

// settle prunes a sliding log and adds its pending entry.
func (st *state) settle(now int64) {
	l := st.log
	if l == nil {
		return
	}
	l.entries = algo.Prune(l.entries, now, l.period)
	if l.hasPend {
		l.entries = algo.Insert(l.entries, l.pend)
		l.hasPend = false
	}
}

// bucket is one bucket, locked on its own (a token bucket's single-hit
// decisions take no lock, see token.go): callers on different buckets never
// wait for each other, and finding a bucket takes no lock at all.
// A bucket the sweeper removed is dead; a caller that finds it dead looks
// the key up again.
//
// A token bucket is this struct alone, 64 bytes, which the allocator puts on
// one cache line: a lookup that compares the key and the decision that
// swaps the arrival time touch one line. A window bucket carries its state
// right after it (see winBucket) and points at it.
type bucket struct {
	tat  atomic.Int64 // a token bucket's arrival time, µs
	mu   sync.Mutex
	id   uint64 // creation order: calls that lock several lock in id order
	held int64  // a frozen token bucket's arrival time, under mu
	key  string // a token bucket's key, in strTable
	win  *state // a window bucket's state, under mu; nil for a token bucket
	dead bool
}

// winBucket is a window bucket: the bucket and, in the same allocation, the
// state it points at.
type winBucket struct {
	bucket
	st state
}

// load returns b's state for a caller that holds b's lock (a token bucket's
// frozen by the caller); store keeps st as it.
func (b *bucket) load() state {
	if b.win != nil {
		return *b.win
	}
	return state{a: b.held, expires: b.held}
}

func (b *bucket) store(st state) {
	if b.win != nil {
		*b.win = st
	} else {
		b.held = st.a
	}
}

// table holds the buckets, with lock-free lookups: token buckets by plain
// key (the common case), window buckets by key and period, digests of long
// keys apart.
type table struct {
	tb   strTable
	win  [numAlgorithms]sync.Map // shortKey -> *bucket
	long sync.Map                // longKey -> *bucket
	c    counts
}

// counts are the table's counters and its bound.
type counts struct {
	ids  atomic.Uint64 // buckets ever created: the next bucket's id
	live atomic.Int64  // buckets held
	max  int64         // bound on live; 0: none
	room func()        // makes room when live reaches max; called holding no lock
}

// reserve makes room, if the table is full, for a bucket about to be
// created. The caller holds no lock.
func (c *counts) reserve() {
	if c.max > 0 && c.live.Load() >= c.max {
		c.room()
	}
}

// numAlgorithms bounds sluice.Algorithm values; Hit.Check refuses others.
const numAlgorithms = 4

// bucket returns k's bucket, creating it if create is set, else nil when
// there is none. The key is passed to the map as its own type in each
// branch, so looking up allocates nothing. A caller that found the bucket
// dead asks again with again set (for a token bucket under a short key it
// then waits for the sweeper to publish its shard's new table; the other
// buckets are removed before the sweeper lets go of their lock).
func (t *table) bucket(k bucketKey, create, again bool) *bucket {
	var v any
	var ok bool
	switch {
	case k.long != nil:
		key := longKey{*k.long, k.alg, k.period}
		if v, ok = t.long.Load(key); !ok && create {
			v = t.store(&t.long, key, k.alg)
		}
	case k.alg == sluice.TokenBucket:
		return t.tb.bucket(k.short, create, again, &t.c)
	default:
		key := shortKey{k.short, k.period}
		if v, ok = t.win[k.alg].Load(key); !ok && create {
			v = t.store(&t.win[k.alg], key, k.alg)
		}
	}
	if v == nil {
		return nil
	}
	return v.(*bucket)
}

// tokenBucket is bucket for a token-bucket hit: a key short enough to keep
// is looked up without building a bucketKey.
func (t *table) tokenBucket(h *sluice.Hit, create, again bool) *bucket {
	if len(h.Key) <= maxKeyLen {
		return t.tb.bucket(h.Key, create, again, &t.c)
	}
	return t.bucket(makeKey(h), create, again)
}

// store returns key's bucket in m, creating it (after making room for it)
// unless another caller just did.
func (t *table) store(m *sync.Map, key any, alg sluice.Algorithm) any {
	t.c.reserve()
	v, loaded := m.LoadOrStore(key, t.newBucket(alg))
	if !loaded {
		t.c.live.Add(1)
	}
	return v
}

// newBucket returns a new bucket for alg, to keep in a sync.Map (strTable
// makes its own).
func (t *table) newBucket(alg sluice.Algorithm) *bucket {
	if alg == sluice.TokenBucket {
		return &bucket{id: t.c.ids.Add(1)}
	}
	w := &winBucket{bucket: bucket{id: t.c.ids.Add(1)}}
	w.win = &w.st
	return &w.bucket
}

// numSegments is how many parts the table is swept and evicted in, one at
// a time: each of strTable's shards, then each sync.Map.
const numSegments = strShards + numAlgorithms + 1

// visit calls f for every bucket of segment i not in use, with the
// bucket's lock held, and forgets those for which f returns true: it marks
// them dead (callers that still hold one look its key up again) and removes
// them while still holding the lock. It returns how many it forgot. A
// bucket whose lock is held right now is in use, so not worth forgetting:
// visit passes over it rather than wait, and so never makes a caller wait
// behind another bucket's caller.
func (t *table) visit(i int, f func(b *bucket) (forget bool)) int {
	if i < strShards {
		n := t.tb.eachIn(i, func(b *bucket) bool {
			if !b.mu.TryLock() {
				return false
			}
			defer b.mu.Unlock()
			b.dead = f(b)
			return b.dead
		})
		t.c.live.Add(-int64(n))
		return n
	}
	m := &t.long
	if j := i - strShards; j < numAlgorithms {
		m = &t.win[j]
	}
	n := 0
	m.Range(func(key, v any) bool {
		b := v.(*bucket)
		if !b.mu.TryLock() {
			return true
		}
		defer b.mu.Unlock()
		if f(b) {
			b.dead = true
			if m.CompareAndDelete(key, v) {
				n++
			}
		}
		return true
	})
	t.c.live.Add(-int64(n))
	return n
}

// sweep visits every segment (see visit) and returns how many buckets it
// forgot.
func (t *table) sweep(f func(b *bucket) (forget bool)) int {
	n := 0
	for i := range numSegments {
		n += t.visit(i, f)
	}
	return n
}

// count calls f once for every bucket, taking no bucket lock.
func (t *table) count(f func()) {
	t.tb.each(func(*bucket) bool { f(); return false })
	t.syncMaps(func(m *sync.Map) {
		m.Range(func(any, any) bool { f(); return true })
	})
}

// syncMaps calls f with each of the maps of buckets other than strTable's.
func (t *table) syncMaps(f func(*sync.Map)) {
	for i := range t.win {
		f(&t.win[i])
	}
	f(&t.long)
}
