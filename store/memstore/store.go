package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/algo"
)

// Store is the in-process store. Create it with [New]; it is safe for
// concurrent use. Call [Store.Close] to stop its sweeper.
type Store struct {
	clock  sluice.Clock // nil: monotonic time since epoch
	epoch  time.Time    // carries a monotonic reading
	epochU int64        // epoch in Unix microseconds
	table  table
	limits limitMemo
	evict  evictor
	pen    penalties
	closed atomic.Bool
	stop   chan struct{}
	done   sync.WaitGroup
}

var _ sluice.Store = (*Store)(nil)

// New returns a store configured by cfg. Unless cfg.SweepInterval is
// negative it starts one sweeper goroutine, which [Store.Close] stops.
func New(cfg Config) *Store {
	cfg = cfg.withDefaults()
	s := &Store{
		clock: cfg.Clock,
		epoch: time.Now(),
		stop:  make(chan struct{}),
	}
	s.epochU = s.epoch.UnixMicro()
	s.table.tb.init()
	if cfg.MaxBuckets > 0 {
		s.table.c.max = int64(cfg.MaxBuckets)
		s.table.c.room = s.makeRoom
	}
	s.evict.events = cfg.Events
	if cfg.SweepInterval > 0 {
		s.done.Add(1)
		go s.sweepLoop(cfg.SweepInterval)
	}
	return s
}

// Take decides hits atomically (see [sluice.Store]). It does no I/O and
// ignores ctx. After Close it returns an error wrapping [sluice.ErrClosed].
func (s *Store) Take(_ context.Context, hits []sluice.Hit, out []sluice.Result) error {
	if len(hits) == 1 && len(out) > 0 {
		// The most common call, one token-bucket hit, checked against
		// limits already validated.
		if v, ok := s.tokenHit(&hits[0]); ok {
			if s.closed.Load() {
				return errClosed()
			}
			s.takeToken(s.now(), &hits[0], v, &out[0])
			return nil
		}
	}
	if err := sluice.CheckHits(hits, out); err != nil {
		return fmt.Errorf("memstore: %w", err)
	}
	if s.closed.Load() {
		return errClosed()
	}
	now := s.now()
	switch {
	case penalized(hits):
		s.takePenalized(now, hits, out)
	case len(hits) > 1:
		s.takeMany(now, hits, out)
	case hits[0].Algorithm == sluice.TokenBucket: // a partial hit: tokenHit passes those over
		v, _ := s.limits.tokenBucket(hits[0].Limit)
		s.takeToken(now, &hits[0], v, &out[0])
	default:
		s.takeOne(now, &hits[0], &out[0])
	}
	return nil
}

// InProcess reports true: the store does no I/O, so its calls need no
// latency budget (see [sluice.InProcessStore]).
func (s *Store) InProcess() bool { return true }

func errClosed() error { return &sluice.StoreError{Op: "memstore: take", Kind: sluice.ErrClosed} }

// tokenHit returns the numbers of h's limit when h is a valid token-bucket
// hit that takes exactly its cost, else false (the general path then decides
// it, or reports why it cannot).
func (s *Store) tokenHit(h *sluice.Hit) (algo.TBNums, bool) {
	if h.Algorithm != sluice.TokenBucket || h.Cost < 0 || h.Key == "" || h.MinCost != 0 || h.Peek && h.Force || h.Block != 0 || h.After != 0 || h.Concurrency {
		return algo.TBNums{}, false
	}
	return s.limits.tokenBucket(h.Limit)
}

// now returns the time in Unix microseconds. The default clock reads only
// the monotonic clock (one cheap call) and adds it to the wall time at New.
func (s *Store) now() int64 {
	if s.clock == nil {
		return s.epochU + int64(time.Since(s.epoch)/time.Microsecond)
	}
	return s.clock.Now().UnixMicro()
}

// takeOne decides one hit that is not a token bucket's: a lock-free lookup,
// one bucket lock.
func (s *Store) takeOne(now int64, h *sluice.Hit, out *sluice.Result) {
	k := makeKey(h)
	for again := false; ; again = true {
		b := s.table.bucket(k, !h.Peek, again)
		if b == nil { // a peek at a bucket never used: nothing to store
			o, _, _ := decide(now, h, state{})
			o.Result(out, h.Limit, false)
			return
		}
		b.mu.Lock()
		if b.dead { // swept after we found it: look again
			b.mu.Unlock()
			continue
		}
		o, next, rc := decide(now, h, *b.win)
		taken := consumes(h, &o)
		if taken {
			next.settle(now)
			*b.win = next
		}
		b.mu.Unlock()
		o.Result(out, h.Limit, taken)
		setReceipt(out, h, taken, rc)
		return
	}
}

// takeMany locks every bucket the hits touch, in creation order (so calls
// cannot deadlock), decides every hit against the state earlier hits of the
// same call would leave, and writes only when the request is admitted.
func (s *Store) takeMany(now int64, hits []sluice.Hit, out []sluice.Result) {
	var bucketBuf, lockBuf [8]*bucket
	var outBuf [8]algo.Outcome
	var nextBuf [8]state
	var rcBuf [8]sluice.Receipt
	buckets, locked := s.lockBuckets(hits, bucketBuf[:0], lockBuf[:0])
	outs, next, rcs := outBuf[:0], nextBuf[:0], rcBuf[:0]
	admitted := true
	for i := range hits {
		o, n, rc := decide(now, &hits[i], stateBefore(hits, buckets, outs, next, i))
		outs = append(outs, o)
		next = append(next, n)
		rcs = append(rcs, rc)
		if h := &hits[i]; !o.Allowed && !h.Shadow && !h.Force && !h.Peek {
			admitted = false
		}
	}
	for i := range hits {
		h := &hits[i]
		taken := h.Force || admitted && consumes(h, &outs[i])
		if taken && !supersededLater(hits, outs, buckets, i) {
			// Only the last taken hit on a bucket writes: its state already
			// includes the earlier ones' (and may share their memory).
			next[i].settle(now)
			buckets[i].store(next[i])
		}
		outs[i].Result(&out[i], h.Limit, taken)
		setReceipt(&out[i], h, taken, rcs[i])
	}
	for _, b := range locked {
		b.thaw()
		b.mu.Unlock()
	}
}

// lockBuckets finds or creates the bucket of every hit (appended to
// buckets, one per hit) and locks and freezes each distinct one, in
// creation order (appended to locked), looking again while one of them
// was swept after it was found.
func (s *Store) lockBuckets(hits []sluice.Hit, buckets, locked []*bucket) ([]*bucket, []*bucket) {
	for again := false; ; again = true {
		buckets = buckets[:0]
		for i := range hits {
			buckets = append(buckets, s.table.bucket(makeKey(&hits[i]), true, again))
		}
		locked = append(locked[:0], buckets...)
		slices.SortFunc(locked, func(a, b *bucket) int { return cmp.Compare(a.id, b.id) })
		locked = slices.Compact(locked)
		dead := false
		for _, b := range locked {
			b.mu.Lock()
			dead = dead || b.dead
		}
		if !dead {
			for _, b := range locked {
				b.freeze()
			}
			return buckets, locked
		}
		for _, b := range locked { // one was swept after we found it: look again
			b.mu.Unlock()
		}
	}
}

// stateBefore returns the state hits[i] is decided on, given the outcomes
// and next states of the hits before it in the call: its bucket's, or
// what the last earlier hit that consumes on the same bucket would leave.
func stateBefore(hits []sluice.Hit, buckets []*bucket, outs []algo.Outcome, next []state, i int) state {
	for j := i - 1; j >= 0; j-- {
		if consumes(&hits[j], &outs[j]) && buckets[j] == buckets[i] {
			return next[j]
		}
	}
	return buckets[i].load()
}

// supersededLater reports whether a hit after i consumes on i's bucket.
func supersededLater(hits []sluice.Hit, outs []algo.Outcome, buckets []*bucket, i int) bool {
	for j := i + 1; j < len(hits); j++ {
		if consumes(&hits[j], &outs[j]) && buckets[j] == buckets[i] {
			return true
		}
	}
	return false
}

// consumes reports whether h, decided as o, consumes if its request is
// admitted: it passed and is not a peek, or it is forced.
func consumes(h *sluice.Hit, o *algo.Outcome) bool { return o.Allowed && !h.Peek || h.Force }

// setReceipt writes into r the receipt rc of h when h consumed and is not
// forced (forced charges are never given back).
func setReceipt(r *sluice.Result, h *sluice.Hit, taken bool, rc sluice.Receipt) {
	if taken && !h.Force {
		r.Receipt = rc
	}
}

// decide computes h's outcome on state st, and the state to keep and the
// receipt to report if it consumes (it passed and the request was admitted,
// or it is forced). A partial hit is decided for its minimum cost first,
// then takes what is left, up to its cost.
func decide(now int64, h *sluice.Hit, st state) (algo.Outcome, state, sluice.Receipt) {
	cost := h.Units()
	if h.MinCost > 0 {
		o, _ := decideCost(now, h, st, h.MinCost)
		if !o.Allowed {
			return o, st, sluice.Receipt{}
		}
		cost = algo.PartialCost(&o, cost)
	}
	o, next := decideCost(now, h, st, cost)
	rc := sluice.Receipt{Taken: cost, Mark: next.a}
	if l := next.log; l != nil {
		rc = sluice.Receipt{Taken: l.pend.Cost, Mark: l.pend.TS, Seq: l.pend.Seq}
	}
	return o, next, rc
}

// decideCost computes the outcome of h with the given cost on state st and
// the state to keep if it consumes.
func decideCost(now int64, h *sluice.Hit, st state, cost int64) (algo.Outcome, state) {
	l := h.Limit
	switch h.Algorithm {
	case sluice.FixedWindow:
		if l.Calendar != sluice.NoCalendar {
			o, idx, n := algo.CalendarWindow(now, algo.SpanOf(l, now), st.a, st.b, l.Capacity(), cost, h.Force)
			return o, state{a: idx, b: n, expires: now + o.ResetAfterIf}
		}
		o, idx, n := algo.FixedWindow(now, st.a, st.b, l.PeriodMicros(), l.Capacity(), cost, h.Force)
		return o, state{a: idx, b: n, expires: now + o.ResetAfterIf}
	case sluice.SlidingWindow:
		o, n := algo.SlidingWindow(now, st.a, st.b, st.c, l.PeriodMicros(), l.Capacity(), cost, h.Force)
		return o, state{a: n[0], b: n[1], c: n[2], expires: now + o.ResetAfterIf}
	case sluice.SlidingLog:
		var entries []algo.Entry
		if st.log != nil {
			entries = st.log.entries
			if st.log.hasPend { // an earlier hit of the same call on this log consumed
				entries = algo.Insert(append([]algo.Entry(nil), entries...), st.log.pend)
			}
		}
		p := l.PeriodMicros()
		o, e, add := algo.SlidingLog(now, entries, p, l.Capacity(), cost, h.Force)
		if h.Concurrency && !o.Allowed {
			o.RetryAfter = min(o.RetryAfter, sluice.ConcurrencyRetry.Microseconds())
		}
		return o, state{log: &logState{entries: entries, period: p, pend: e, hasPend: add}, expires: now + o.ResetAfterIf}
	default: // sluice.TokenBucket; Hit.Check refused unknown algorithms
		o, tat := algo.TokenBucket(now, st.a, l.IntervalMicros(), l.Capacity(), cost, h.Force)
		return o, state{a: tat, expires: tat}
	}
}

// Len returns the number of buckets held, including any not yet swept.
func (s *Store) Len() int {
	n := 0
	s.table.count(func() { n++ })
	return n
}

// Sweep forgets every bucket that is full again (and every penalty that
// neither blocks nor counts refusals any more) and returns how many
// buckets it forgot. The sweeper does the same in steps; tests may call it.
func (s *Store) Sweep() int {
	now := s.now()
	s.sweepPenalties(now)
	return s.table.sweep(func(b *bucket) bool { return b.full(now) })
}

// sweepSteps is how many steps the sweeper takes to pass over every
// segment of the table once.
const sweepSteps = 16

// sweepLoop sweeps a sixteenth of the table's segments every sixteenth of
// the interval, so that it passes over every bucket once per interval
// without ever working on more than one segment at a time.
func (s *Store) sweepLoop(every time.Duration) {
	defer s.done.Done()
	t := time.NewTicker(max(every/sweepSteps, time.Microsecond))
	defer t.Stop()
	hand := 0
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			now := s.now()
			if hand == 0 {
				s.sweepPenalties(now)
			}
			for range (numSegments + sweepSteps - 1) / sweepSteps {
				s.table.visit(hand, func(b *bucket) bool { return b.full(now) })
				hand = (hand + 1) % numSegments
			}
		}
	}
}

// Close stops the sweeper and waits for it. Later calls to Take fail with
// [sluice.ErrClosed]. Close is idempotent and always returns nil. It does
// no I/O, so ctx is not used: every store of this module closes with a
// context, as those that do I/O when closing need one.
func (s *Store) Close(ctx context.Context) error {
	if s.closed.CompareAndSwap(false, true) {
		close(s.stop)
	}
	s.done.Wait()
	return nil
}
