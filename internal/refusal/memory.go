// Package refusal remembers the refusals a store behind a network answered,
// so that the next checks of a refused bucket are refused in process until
// the refusal could have changed.
//
// A refusal of cost c with retry time R means the bucket cannot admit c
// before R has passed while others only consume: a token bucket refills at
// its rate, a fixed window resets at its end, a sliding window's weight
// only decays, a log's oldest entry only ages; others consuming can only
// make R longer. So until R has passed, refusing a hit of that bucket at
// cost c or more is what the store would answer. R is counted from when
// the call was sent, before the store decided, so the memory ends no later
// than the store's refusal would.
//
// Tokens that come back early (a refund, a lease given back, an operator's
// reset, a raised limit that keeps the bucket's key) make a remembered
// refusal refuse what the store would admit. A refusal is remembered at
// most MaxAge, which bounds that error.
//
// The memory is a fixed table of entries, two candidate slots a bucket,
// read without locks: a flood of distinct keys replaces entries, it never
// grows the table. Forgetting is always safe (it costs one store call), so
// a slot taken by another bucket loses nothing but that call.
//
// A Record keeps, beside it, what the store last said of every bucket it
// decided, refused or not: a Memory given one (Knowing) reports it for the
// other hits of a call it answers, and a local fallback starts its buckets
// from it.
package refusal

import (
	"fmt"
	"hash/maphash"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
)

const (
	// DefaultMaxAge is how long a refusal is remembered at most, unless
	// configured.
	DefaultMaxAge = time.Second
	// DefaultSize is how many refused buckets are remembered at most,
	// unless configured.
	DefaultSize = 65536
)

// Validate checks a store's refusal-memory size (0: DefaultSize; negative
// is an error). pkg names the store's package in the error, such as
// "redisstore".
func Validate(pkg string, size int) error {
	if size < 0 {
		return fmt.Errorf("%w: %s: Config.RefusalMemory %d: must not be negative (0 means %d)", sluice.ErrInvalidConfig, pkg, size, DefaultSize)
	}
	return nil
}

// Memory remembers refusals. A nil *Memory remembers nothing: its methods
// answer nothing and record nothing.
type Memory struct {
	slots  []atomic.Pointer[entry]
	mask   uint64
	seed   maphash.Seed
	maxAge int64 // nanoseconds
	now    func() int64
	rec    *Record // what is known of the other hits of a call answered; nil: nothing
}

// entry is one remembered refusal, immutable once published.
type entry struct {
	key     string
	group   string
	limit   sluice.Limit
	alg     sluice.Algorithm
	unsat   bool
	blocked bool  // refused by its penalty's block: at any cost
	cost    int64 // the least cost refused
	expires int64 // when the entry stops answering: sent + min(R, maxAge)
	retryAt int64 // sent + R: when a hit of cost would pass
	resetAt int64 // sent + ResetAfter
	left    int64 // Remaining when refused
}

// New returns a memory of size entries (0: DefaultSize) that remembers a
// refusal at most maxAge (0: DefaultMaxAge), or nil when maxAge is
// negative (off). now returns a monotonic time in nanoseconds; nil means
// the process's monotonic clock.
func New(maxAge time.Duration, size int, now func() int64) *Memory {
	if maxAge < 0 {
		return nil
	}
	if maxAge == 0 {
		maxAge = DefaultMaxAge
	}
	if size <= 0 {
		size = DefaultSize
	}
	n := 2
	for n < size {
		n <<= 1
	}
	if now == nil {
		now = monotonic
	}
	return &Memory{
		slots:  make([]atomic.Pointer[entry], n),
		mask:   uint64(n - 1),
		seed:   maphash.MakeSeed(),
		maxAge: int64(maxAge),
		now:    now,
	}
}

// Knowing returns m reporting, for the other hits of a call it answers,
// what rec (on m's clock) knows of their buckets. nil stays nil.
func (m *Memory) Knowing(rec *Record) *Memory {
	if m != nil {
		m.rec = rec
	}
	return m
}

// Now returns the memory's clock: read it before sending a call whose
// refusals are to be remembered, and pass it to Remember.
func (m *Memory) Now() int64 {
	if m == nil {
		return 0
	}
	return m.now()
}

// cost is what a hit is refused at: a partial hit's least, else its cost.
func cost(h *sluice.Hit) int64 {
	if h.MinCost > 0 {
		return h.MinCost
	}
	return h.Units()
}

// counts reports whether h's refusal refuses its request and can be
// remembered: an enforcing hit, not a peek, not forced.
func counts(h *sluice.Hit) bool { return !h.Shadow && !h.Peek && !h.Force }

// Answer answers hits from memory when one of them is a bucket remembered
// as refused at its cost (or, for a token bucket, at a lower cost: a
// higher one waits that many emission intervals more): it writes out and
// reports true. Each remembered hit gets its remembered refusal (Allowed
// false, RetryAfter and ResetAfter counted down, Remaining as the bucket
// holds it); every other hit is undecided: Allowed true, its Limit,
// nothing consumed, and Remaining and ResetAfter as the memory's Record
// knows its bucket (see [Record.Known]), else 0. Every result is marked
// Remembered.
//
// A call with a shadow hit, a peek or a forced hit is never answered: the
// store would consume a passing shadow hit's cost, and report a peek's
// state; nor is one with two hits on one bucket, the later of which the
// store decides as if the earlier had consumed. Answer reports false, writing only zero results, when the store
// must decide.
func (m *Memory) Answer(hits []sluice.Hit, out []sluice.Result) bool {
	if m == nil || len(hits) == 0 {
		return false
	}
	for i := range hits {
		if !counts(&hits[i]) || sharesBucket(hits[:i], &hits[i]) {
			return false
		}
	}
	// Most calls find none of their buckets here: those need no clock,
	// which is read once, at the first bucket held.
	var now int64
	clocked, found := false, false
	for i := range hits {
		h := &hits[i]
		out[i] = sluice.Result{}
		slot := m.slotOf(h.Key)
		if !m.holds(h, slot) {
			continue
		}
		if !clocked {
			now, clocked = m.now(), true
		}
		e, later := m.lookup(h, slot, now)
		if e == nil {
			continue
		}
		found = true
		reset := max(e.resetAt-now, 0)
		out[i] = sluice.Result{
			Limit:         h.Limit,
			Remaining:     e.remaining(reset),
			ResetAfter:    time.Duration(reset),
			Unsatisfiable: e.unsat,
			Blocked:       e.blocked,
			Remembered:    true,
		}
		if !e.unsat {
			out[i].RetryAfter = time.Duration(max(e.retryAt+later-now, 1))
		}
	}
	if !found {
		return false
	}
	for i := range hits {
		if !out[i].Remembered {
			out[i] = sluice.Result{Allowed: true, Limit: hits[i].Limit, Remembered: true}
			if st, ok := m.rec.Known(&hits[i], now); ok {
				out[i].Remaining, out[i].ResetAfter = st.Remaining, st.ResetAfter
			}
		}
	}
	return true
}

// remaining returns what e's bucket holds reset nanoseconds before it is
// full: exact for a token bucket, which nothing but time has changed
// since it was refused; for the window algorithms, what it held when
// refused (a lower bound: while the refusal stands, time only adds); 0
// while a penalty's block refuses it, as the store says then.
func (e *entry) remaining(reset int64) int64 {
	if e.blocked {
		return 0
	}
	if e.alg != sluice.TokenBucket {
		return e.left
	}
	interval := e.limit.IntervalMicros()
	slack := e.limit.Capacity()*interval - (reset+999)/1000
	if slack <= 0 {
		return 0
	}
	return slack / interval
}

// slotOf returns the first of key's two slots (the other is it ^ 1).
func (m *Memory) slotOf(key string) uint64 {
	return maphash.String(m.seed, key) & m.mask
}

// of reports whether e is an entry of h's bucket, live or not.
func (e *entry) of(h *sluice.Hit) bool {
	return e.key == h.Key && e.alg == h.Algorithm && e.limit == h.Limit && e.group == h.Group
}

// holds reports whether h's key's slots, from i (see slotOf), hold an
// entry of h's bucket, live or not.
func (m *Memory) holds(h *sluice.Hit, i uint64) bool {
	for _, j := range [2]uint64{i, i ^ 1} {
		if e := m.slots[j].Load(); e != nil && e.of(h) {
			return true
		}
	}
	return false
}

// lookup returns the live entry, in h's key's slots from i (see slotOf),
// that refuses h at now, or nil, and how
// much later than the remembered refusal h could pass: a token bucket
// (GCRA) refused at cost c admits c' = c + d exactly d emission intervals
// later; for the other algorithms only the refused cost itself is known.
func (m *Memory) lookup(h *sluice.Hit, i uint64, now int64) (*entry, int64) {
	c := cost(h)
	for _, j := range [2]uint64{i, i ^ 1} {
		e := m.slots[j].Load()
		if e == nil || now >= e.expires || !e.of(h) {
			continue
		}
		switch {
		case c == e.cost || e.blocked:
			return e, 0
		case c > e.cost && !e.unsat && e.alg == sluice.TokenBucket && c <= e.limit.Capacity():
			return e, (c - e.cost) * e.limit.IntervalMicros() * int64(time.Microsecond)
		}
	}
	return nil, 0
}

// Remember records the refusals among hits decided into out by a call
// sent at sent (a reading of Now taken before it was sent): each enforcing
// hit that did not pass on its own. It forgets the buckets of hits that
// passed or were forced: they may have consumed, which a remembered
// refusal of theirs would not count.
func (m *Memory) Remember(hits []sluice.Hit, out []sluice.Result, sent int64) {
	if m == nil {
		return
	}
	for i := range hits {
		h, r := &hits[i], &out[i]
		if r.Remembered {
			continue
		}
		if r.Allowed || h.Force {
			m.Forget(h.Key)
			continue
		}
		if !counts(h) || (r.RetryAfter <= 0 && !r.Unsatisfiable) || sharesBucket(hits[:i], h) {
			continue
		}
		if h.Block > 0 && !r.Blocked {
			// A refusal that counts toward a penalty's block is the
			// store's to count: at most After of them per period reach
			// it before the block, which is remembered.
			continue
		}
		age := m.maxAge
		if !r.Unsatisfiable {
			age = min(age, int64(r.RetryAfter))
		}
		m.put(&entry{
			key: h.Key, group: h.Group, limit: h.Limit, alg: h.Algorithm, unsat: r.Unsatisfiable, blocked: r.Blocked,
			cost:    cost(h),
			expires: sent + age,
			retryAt: sent + int64(r.RetryAfter),
			resetAt: sent + int64(r.ResetAfter),
			left:    r.Remaining,
		})
	}
}

// sharesBucket reports whether one of earlier is a hit on h's bucket: h
// was then decided as if that one had consumed, not on its own.
func sharesBucket(earlier []sluice.Hit, h *sluice.Hit) bool {
	for j := range earlier {
		if earlier[j].Key == h.Key && earlier[j].Group == h.Group {
			return true
		}
	}
	return false
}

// put stores e in one of its key's two slots: the one holding its key, or
// an empty or expired one, or else the one that expires first.
func (m *Memory) put(e *entry) {
	i := m.slotOf(e.key)
	a, b := &m.slots[i], &m.slots[i^1]
	ea, eb := a.Load(), b.Load()
	switch {
	case ea != nil && ea.key == e.key:
	case eb != nil && eb.key == e.key:
		a = b
	case ea == nil:
	case eb == nil:
		a = b
	case eb.expires < ea.expires:
		a = b
	}
	a.Store(e)
}

// Forget drops what is remembered of key's bucket: a refund or a reset
// made through this process gave tokens back.
func (m *Memory) Forget(key string) {
	if m == nil {
		return
	}
	i := m.slotOf(key)
	for _, j := range [2]uint64{i, i ^ 1} {
		if e := m.slots[j].Load(); e != nil && e.key == key {
			m.slots[j].CompareAndSwap(e, nil)
		}
	}
}

// WithClock returns an empty memory like m that reads now instead: for a
// store whose decisions follow another clock (a test's). nil stays nil.
func (m *Memory) WithClock(now func() int64) *Memory {
	if m == nil {
		return nil
	}
	c := *m
	c.slots = make([]atomic.Pointer[entry], len(m.slots))
	c.now = now
	c.rec = nil
	return &c
}
