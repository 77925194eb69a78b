package memstore

import (
	"crypto/sha256"
	"sync"

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
// starts new buckets (as in the Redis store).
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
	}
	if len(h.Key) <= maxKeyLen {
		k.short = h.Key
		return k
	}
	sum := sha256.Sum256([]byte(h.Key))
	k.long = &sum
	return k
}

// shortKey and longKey are the map keys of buckets whose keys are short
// enough to keep, and of those stored as a digest.
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
// sliding log keeps its entries in log, and a decision that adds one carries
// it in pend until it is written.
type state struct {
	a, b, c int64
	expires int64
	log     []algo.Entry
	period  int64 // sliding log: the window, for pruning
	pend    algo.Entry
	hasPend bool
}

// shard is one independently locked part of the store. Short keys live in
// one map per algorithm, keyed by the plain string (the fastest map key);
// digests of long keys live apart, so they cannot collide with short keys.
type shard struct {
	mu   sync.Mutex
	tb   map[string]*state                  // token buckets, by key
	win  [numAlgorithms]map[shortKey]*state // window algorithms, by key and period
	long map[longKey]*state
	_    [64]byte // keep neighbouring shards' locks off one cache line
}

// numAlgorithms bounds sluice.Algorithm values; Hit.Check refuses others.
const numAlgorithms = 4

func (sh *shard) init() {
	sh.tb = make(map[string]*state)
	for i := range sh.win {
		sh.win[i] = make(map[shortKey]*state)
	}
	sh.long = make(map[longKey]*state)
}

// get returns k's state, or nil for a bucket not held. Callers update the
// state in place, so a bucket already held costs no map write.
func (sh *shard) get(k bucketKey) *state {
	switch {
	case k.long != nil:
		return sh.long[longKey{*k.long, k.alg, k.period}]
	case k.alg == sluice.TokenBucket:
		return sh.tb[k.short]
	}
	return sh.win[k.alg][shortKey{k.short, k.period}]
}

// put writes st for k, whose held state is p (nil when none), or forgets k
// when st is already a full bucket at now.
func (sh *shard) put(k bucketKey, p *state, st state, now int64) {
	switch {
	case st.expires <= now && p == nil:
	case st.expires <= now:
		sh.remove(k)
	case p != nil:
		*p = st
		p.settle(now)
	case k.long != nil:
		sh.long[longKey{*k.long, k.alg, k.period}] = newState(st, now)
	case k.alg == sluice.TokenBucket:
		sh.tb[k.short] = newState(st, now)
	default:
		sh.win[k.alg][shortKey{k.short, k.period}] = newState(st, now)
	}
}

func (sh *shard) remove(k bucketKey) {
	switch {
	case k.long != nil:
		delete(sh.long, longKey{*k.long, k.alg, k.period})
	case k.alg == sluice.TokenBucket:
		delete(sh.tb, k.short)
	default:
		delete(sh.win[k.alg], shortKey{k.short, k.period})
	}
}

// settle prunes a sliding log and adds its pending entry.
func (st *state) settle(now int64) {
	if st.period > 0 {
		st.log = algo.Prune(st.log, now, st.period)
	}
	if st.hasPend {
		st.log = algo.Insert(st.log, st.pend)
		st.hasPend = false
	}
}

// newState copies st to the heap. (Taking &st in put would move every
// call's st to the heap, not just the inserting ones.)
func newState(st state, now int64) *state {
	p := new(state)
	*p = st
	p.settle(now)
	return p
}

// value returns *p, or the zero state (a bucket never used) for nil.
func value(p *state) state {
	if p == nil {
		return state{}
	}
	return *p
}

func (sh *shard) len() int {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n := len(sh.long) + len(sh.tb)
	for _, m := range sh.win {
		n += len(m)
	}
	return n
}

// sweep forgets every bucket that is full again at now and returns how many
// it forgot.
func (sh *shard) sweep(now int64) int {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n := sweepMap(sh.tb, now) + sweepMap(sh.long, now)
	for _, m := range sh.win {
		n += sweepMap(m, now)
	}
	return n
}

func sweepMap[K comparable](m map[K]*state, now int64) int {
	n := 0
	for k, st := range m {
		if st.expires <= now {
			delete(m, k)
			n++
		}
	}
	return n
}
