package memstore

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// strTable maps string keys to buckets, for the token buckets that are by
// far the most common: finding a bucket takes no lock and writes no shared
// memory, and costs one hash of the key and, usually, one probe.
//
// The keys are spread over shards by the top bits of their hash. A shard's
// slots are an open-addressing table (linear probing, at most 3/4 full, so
// a probe always ends at an empty slot) published through an atomic pointer:
// readers load it and probe without locking; writers hold the shard's mutex,
// fill an empty slot, and publish a new table to grow it or to drop swept
// buckets. A bucket is shared by every table it appears in, so a reader
// still probing an old table finds the same bucket as everyone else. A
// published table holds no dead bucket except while its shard's mutex is
// held, which is why a caller that finds a dead bucket takes the mutex to
// look again.
//
// A slot keeps its key's hash beside the bucket pointer, so probing past
// other keys reads no bucket.
type strTable struct {
	seed   maphash.Seed
	shards [strShards]strShard
}

const (
	strShardBits = 8
	strShards    = 1 << strShardBits
	minSlots     = 8
)

type strShard struct {
	mu    sync.Mutex
	slots atomic.Pointer[strSlots]
	n     int // live buckets, under mu
	_     [40]byte
}

// strSlots is one published table: len(s) is a power of two.
type strSlots struct {
	s []strSlot
}

// strSlot is filled once, hash first, then the bucket pointer, and never
// changed: a reader that loads a non-nil bucket then reads the hash written
// before it.
type strSlot struct {
	e    atomic.Pointer[bucket]
	hash uint64
}

func (t *strTable) init() {
	t.seed = maphash.MakeSeed()
	for i := range t.shards {
		t.shards[i].slots.Store(&noSlots)
	}
}

// noSlots is every shard's first table: one empty slot, so that a lookup
// needs no check for a missing table. insert never fills it (one bucket
// would make it more than 3/4 full) but replaces it.
var noSlots = strSlots{s: make([]strSlot, 1)}

// bucket returns key's bucket, creating it if create is set, else nil when
// there is none. It takes no lock unless it creates the bucket or again is
// set: a caller that found the bucket dead asks again, and waits for the
// sweeper to publish the shard's new table.
func (t *strTable) bucket(key string, create, again bool, c *counts) *bucket {
	h := maphash.String(t.seed, key)
	sh := &t.shards[h>>(64-strShardBits)]
	if !again {
		if b := sh.find(h, key); b != nil || !create {
			return b
		}
	}
	if create {
		c.reserve()
	}
	return sh.lockedBucket(h, key, create, c)
}

// find returns key's bucket, or nil if there is none, taking no lock.
func (t *strTable) find(key string) *bucket {
	h := maphash.String(t.seed, key)
	return t.shards[h>>(64-strShardBits)].find(h, key)
}

// lockedBucket is bucket under the shard's mutex.
func (sh *strShard) lockedBucket(h uint64, key string, create bool, c *counts) *bucket {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if b := sh.find(h, key); b != nil || !create {
		return b
	}
	b := &bucket{id: c.ids.Add(1), key: key}
	sh.insert(h, b)
	c.live.Add(1)
	return b
}

func (sh *strShard) find(h uint64, key string) *bucket {
	tab := sh.slots.Load()
	mask := uint64(len(tab.s) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		sl := &tab.s[i]
		e := sl.e.Load()
		if e == nil {
			return nil
		}
		if sl.hash == h && e.key == key {
			return e
		}
	}
}

// insert adds key's bucket b, which is not there yet, growing the table to
// keep it at most 3/4 full. The caller holds sh.mu.
func (sh *strShard) insert(h uint64, b *bucket) {
	tab := sh.slots.Load()
	if 4*(sh.n+1) > 3*len(tab.s) {
		tab = sh.rebuild(tab, slotsFor(2*(sh.n+1)))
	}
	place(tab, h, b)
	sh.n++
}

// slotsFor returns how many slots n buckets need: at most 3/4 full.
func slotsFor(n int) int { return n + n/3 + 1 }

// rebuild publishes, and returns, a table of at least want slots holding
// old's buckets that are not dead. The caller holds sh.mu.
func (sh *strShard) rebuild(old *strSlots, want int) *strSlots {
	size := minSlots
	for size < want {
		size *= 2
	}
	tab := &strSlots{s: make([]strSlot, size)}
	n := 0
	for i := range old.s {
		sl := &old.s[i]
		if b := sl.e.Load(); b != nil && !b.dead {
			place(tab, sl.hash, b)
			n++
		}
	}
	sh.n = n
	sh.slots.Store(tab)
	return tab
}

// place puts b in the first empty slot of its key's probe sequence.
func place(tab *strSlots, h uint64, b *bucket) {
	mask := uint64(len(tab.s) - 1)
	i := h & mask
	for tab.s[i].e.Load() != nil {
		i = (i + 1) & mask
	}
	sl := &tab.s[i]
	sl.hash = h
	sl.e.Store(b)
}

// each calls f for every bucket, one shard at a time (see eachIn).
func (t *strTable) each(f func(*bucket) (drop bool)) {
	for i := range t.shards {
		t.eachIn(i, f)
	}
}

// peek calls f for every bucket of shard i's published table, taking no
// lock: f may read only what a lookup may (the key, the id, the arrival
// time).
func (t *strTable) peek(i int, f func(*bucket)) {
	tab := t.shards[i].slots.Load()
	for j := range tab.s {
		if b := tab.s[j].e.Load(); b != nil {
			f(b)
		}
	}
}

// eachIn calls f for every bucket of shard i, under the shard's mutex, and
// returns how many it dropped. When f returns true the bucket is dropped:
// f must have marked it dead first. If something was dropped the shard
// gets a new table, sized for what is left.
func (t *strTable) eachIn(i int, f func(*bucket) (drop bool)) int {
	sh := &t.shards[i]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	tab := sh.slots.Load()
	dropped := 0
	for j := range tab.s {
		if b := tab.s[j].e.Load(); b != nil && f(b) {
			dropped++
		}
	}
	if dropped > 0 {
		sh.rebuild(tab, slotsFor(sh.n-dropped))
	}
	return dropped
}
