package lease

import (
	"hash/maphash"
	"sync"
)

const shardCount = 64

// table maps bucket keys to entries, in shards, bounded in size.
type table struct {
	seed     maphash.Seed
	perShard int
	shards   [shardCount]shard
}

type shard struct {
	mu sync.RWMutex
	m  map[string]*entry
	_  [40]byte // keep shards' locks on separate cache lines
}

func (t *table) init(maxKeys int) {
	t.seed = maphash.MakeSeed()
	t.perShard = max(1, maxKeys/shardCount)
	for i := range t.shards {
		t.shards[i].m = make(map[string]*entry)
	}
}

func (t *table) shard(key string) *shard {
	return &t.shards[maphash.String(t.seed, key)%shardCount]
}

// get returns key's entry, or nil.
func (t *table) get(key string) *entry {
	sh := t.shard(key)
	sh.mu.RLock()
	e := sh.m[key]
	sh.mu.RUnlock()
	return e
}

// getOrCreate returns key's entry, creating it with make when there is
// room. It returns nil when the shard is full of entries in use.
func (t *table) getOrCreate(key string, now int64, make func() *entry) *entry {
	if e := t.get(key); e != nil {
		return e
	}
	sh := t.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := sh.m[key]; e != nil {
		return e
	}
	if len(sh.m) >= t.perShard && !sh.evictOne(now) {
		return nil
	}
	e := make()
	sh.m[key] = e
	return e
}

// evictOne forgets one entry that holds nothing: no tokens, no refill in
// flight, no live lease or denial. Called with sh.mu held.
func (sh *shard) evictOne(now int64) bool {
	for k, e := range sh.m {
		if e.idle(now) {
			delete(sh.m, k)
			return true
		}
	}
	return false
}

// each calls f for every entry, a shard at a time, outside the shard's
// lock; f returns whether to forget the entry.
func (t *table) each(buf []*entry, keys []string, f func(*entry) bool) {
	for i := range t.shards {
		sh := &t.shards[i]
		buf, keys = buf[:0], keys[:0]
		sh.mu.RLock()
		for k, e := range sh.m {
			buf, keys = append(buf, e), append(keys, k)
		}
		sh.mu.RUnlock()
		for j, e := range buf {
			if f(e) {
				sh.mu.Lock()
				if sh.m[keys[j]] == e {
					delete(sh.m, keys[j])
				}
				sh.mu.Unlock()
			}
		}
	}
}

// len returns the number of entries.
func (t *table) len() int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.RLock()
		n += len(sh.m)
		sh.mu.RUnlock()
	}
	return n
}
