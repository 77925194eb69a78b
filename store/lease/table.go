package lease

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice"
)

// entry is one leased bucket: the tokens this process holds, and what the
// backing store said at the last refill. The fields the local hit path
// reads are atomics; the refill state is guarded by mu.
type entry struct {
	left    atomic.Int64 // tokens held and not yet served
	served  atomic.Int64 // tokens served from leases so far: local receipts name their places in this count
	expires atomic.Int64 // µs: the lease serves while now < expires
	gen     atomic.Int64 // lease generation (from Store.gens): local receipts name it
	base    atomic.Int64 // fixed window: the backing's Remaining at the last refill
	fullAt  atomic.Int64 // µs: when the backing's bucket is full, as of the last refill
	winEnd  atomic.Int64 // fixed window: µs at which the lease's window ends

	limit    sluice.Limit // immutable
	alg      sluice.Algorithm
	interval int64 // token bucket: µs per token; 0 for a fixed window
	policy   *sluice.LeasePolicy

	mu         sync.Mutex
	refilling  chan struct{}  // closed when the refill in flight ends
	takes      [maxTakes]take // the latest refills, newest first: what returns refund
	k          int64          // the lease size the next refill asks for
	refilledAt int64          // µs
	dry        bool           // the last refill found less than it asked for
	ttl        int64          // µs
	deny       denial
	epoch      int64      // the oldest generation whose local receipts may still be refunded
	given      *givenRing // which of the latest served tokens were given back; nil until a local refund
	swept      int64      // served as of the last local refund: given's slots of later places are stale
}

// givenSpan is how many of a key's latest served tokens a local refund can
// give back: the tokens of a hit served longer ago than that are counted
// as lost when refunded. A power of two.
const givenSpan = 1024

// givenRing has a bit per token among the last givenSpan served, by place
// modulo givenSpan: set once the token has been given back.
type givenRing [givenSpan / 64]uint64

// redeem gives back up to units of the tokens local receipt rc names, each
// token once: back is how many go back into the lease (the caller adds
// them), lost how many were served too long ago to tell (counted as lost,
// never given back). A receipt whose tokens were given back already, or
// that names tokens not served yet, gives back nothing; so does the part
// of a refund beyond the receipt's own cost, whatever its Taken says.
// Called with e.mu held.
func (e *entry) redeem(rc sluice.Receipt, units int64) (back, lost int64) {
	served := e.served.Load()
	cost := int64(uint64(rc.Seq)>>placeBits) & costMask
	place := served - (served-rc.Seq)&placeMask // the latest place at or before served with these low bits
	if cost == 0 || served-place < cost {
		return 0, 0
	}
	units = min(units, cost)
	if e.given == nil {
		e.given = new(givenRing) // no token was given back before: every bit clear
	} else {
		// Clear the slots of the places served since the last refund:
		// they held the bits of places givenSpan earlier.
		for p := max(e.swept, served-givenSpan); p < served; p++ {
			e.given[p/64%(givenSpan/64)] &^= 1 << (p % 64)
		}
	}
	e.swept = served
	old := min(cost, max(0, served-givenSpan-place)) // served too long ago to tell
	for p := place + old; p < place+cost && back < units; p++ {
		w, bit := &e.given[p/64%(givenSpan/64)], uint64(1)<<(p%64)
		if *w&bit == 0 {
			*w |= bit
			back++
		}
	}
	return back, min(units-back, old)
}

// live reports whether e's lease may serve now: before it expires. Held
// tokens are served even once the bucket, counting them as back in it,
// would be full again: an exact bucket would have let that refill go, so
// the instance may admit up to what it holds beyond an exact bucket's
// answer. That is the drift Instances × K bounds (see [MaxLease]), and it
// is what lets a key under its limit be served from leases at all.
func (e *entry) live(now int64) bool { return now < e.expires.Load() }

// windowEnd returns when a fixed window lease's window ends.
func (e *entry) windowEnd() int64 { return e.winEnd.Load() }

// take is one refill as the backing store took it, and how much of it
// may still be given back.
type take struct {
	hit     sluice.Hit
	receipt sluice.Receipt
	left    int64 // Receipt.Taken less what was given back
}

// maxTakes is how many refills an entry remembers. Held tokens come from
// the latest ones (a refill spends what the lease held); a few more cover
// tokens that calls gave back while a refill was in flight. Tokens beyond
// what they cover cannot be returned, and are counted as lost.
const maxTakes = 4

// push records a refill, newest first.
func (e *entry) push(t take) {
	copy(e.takes[1:], e.takes[:maxTakes-1])
	e.takes[0] = t
}

// returns appends to refunds the refunds that give back n held tokens,
// newest refill first, and returns them and what no refill covers.
// Called with e.mu held.
func (e *entry) returns(refunds []sluice.Refund, n int64) ([]sluice.Refund, int64) {
	for i := range e.takes {
		t := &e.takes[i]
		if n == 0 || t.left == 0 {
			continue
		}
		u := min(n, t.left)
		refunds = append(refunds, sluice.Refund{Hit: t.hit, Receipt: t.receipt, Units: u})
		t.left -= u
		n -= u
	}
	return refunds, n
}

// refundable reports whether a local receipt of generation gen may go
// back into e's lease at now: the lease is live and the chain of leases
// since gen is unbroken (no lease of it went back, expired into a new
// window, or was reset). Called with e.mu held.
func (e *entry) refundable(gen, now int64) bool {
	return gen >= e.epoch && gen <= e.gen.Load() && now < e.expires.Load()
}

// keep reports whether tokens reserved from e under generation gen may go
// back into its lease: a token bucket's always (tokens do not age); a
// fixed window's only while the lease they came from is the current one.
func (e *entry) keep(gen int64) bool {
	return e.interval > 0 || e.gen.Load() == gen
}

// denial remembers a refusal by the backing store, so the same cost is
// refused in process until it could pass: a hot key far over its limit
// costs no store call per request.
type denial struct {
	cost, until, remaining, fullAt int64
}

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
		if idle(e, now) {
			delete(sh.m, k)
			return true
		}
	}
	return false
}

// idle reports whether e holds nothing worth keeping.
func idle(e *entry, now int64) bool {
	if e.left.Load() != 0 || now < e.expires.Load() {
		return false
	}
	if !e.mu.TryLock() {
		return false
	}
	defer e.mu.Unlock()
	return e.refilling == nil && now >= e.deny.until
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
