package lease

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/refusal"
	"github.com/sluicehq/sluice/store/lease/internal/hotkey"
)

// Store serves leased buckets in process and passes everything else to
// the backing store. Create it with [New]; it is safe for concurrent use.
// Call [Store.Close] to stop its sweeper and give back every lease.
type Store struct {
	backing   sluice.Store
	refunder  sluice.Refunder // nil: nothing is leased
	cfg       Config
	obs       Observer
	clock     sluice.Clock
	epoch     time.Time
	epochU    int64
	table     table
	hot       *hotkey.Table[*sluice.LeasePolicy, *split]
	scratch   sync.Pool
	closed    atomic.Bool
	givenBack atomic.Bool  // Close is giving every lease back: later refills' tokens are lost
	calls     sync.RWMutex // held for reading by calls that may change leases; Close takes it to wait for them
	stop      chan struct{}
	done      sync.WaitGroup
	gens      atomic.Int64           // the last lease generation: generations are never reused, even by a key forgotten and seen again
	refusals  *refusal.Memory        // nil when off or over an in-process store
	counter   sluice.InstanceCounter // the backing store's, or nil
}

var _ sluice.InstanceCounter = (*Store)(nil)

// instances returns how many processes share the backing store: the
// configured number, else the backing store's count, at least 1.
func (s *Store) instances() int {
	switch {
	case s.cfg.Instances > 0:
		return s.cfg.Instances
	case s.counter != nil:
		return max(s.counter.Instances(), 1)
	}
	return 1
}

// Instances returns how many processes share the backing store (see
// [sluice.InstanceCounter]): Config.Instances when set, else the backing
// store's count, or 0 when it does not count.
func (s *Store) Instances() int {
	switch {
	case s.cfg.Instances > 0:
		return s.cfg.Instances
	case s.counter != nil:
		return s.counter.Instances()
	}
	return 0
}

var (
	_ sluice.Refunder       = (*Store)(nil)
	_ sluice.Resetter       = (*Store)(nil)
	_ sluice.InProcessStore = (*Store)(nil)
	_ sluice.LocalStore     = (*Store)(nil)
)

// A receipt of a hit served from a lease has a negative Seq (the backing
// stores' sequence numbers are never negative); Mark is the lease's
// generation. Seq names the hit's tokens: the low placeBits bits are the
// place of its first token in the key's count of tokens served
// (entry.served, modulo 2^placeBits), the bits above them its cost
// (capped at costMask). So a refund gives back only tokens this receipt
// took, each once (see [entry.redeem]), whatever Receipt.Taken says.
const (
	placeBits = 40
	placeMask = 1<<placeBits - 1
	costMask  = 1<<(63-placeBits) - 1
)

// localReceipt returns the receipt of a hit served from the lease of
// generation gen: taken tokens, the last of them at place end-1.
func localReceipt(taken, gen, end int64) sluice.Receipt {
	place := (end - taken) & placeMask
	return sluice.Receipt{Taken: taken, Mark: gen, Seq: math.MinInt64 | min(taken, costMask)<<placeBits | place}
}

// isLocal reports whether rc is the receipt of a hit served from a lease.
func isLocal(rc sluice.Receipt) bool { return rc.Seq < 0 }

// New returns a lease store over backing. It leases only when backing
// implements [sluice.Refunder]: a refill takes up to K tokens with a
// partial hit, whose receipt says how many it took, and unused tokens go
// back by refund. Over any other store every hit passes through. An
// invalid cfg is an error wrapping [sluice.ErrInvalidConfig] naming the field.
// When it leases, cfg.Instances is 0 and backing does not count its
// instances ([sluice.InstanceCounter]), New logs a warning: the drift
// bound depends on the real instance count.
// Unless cfg.SweepInterval is negative New starts one sweeper goroutine,
// which Close stops.
func New(backing sluice.Store, cfg Config) (*Store, error) {
	if backing == nil {
		return nil, fmt.Errorf("%w: lease: no backing store", sluice.ErrInvalidConfig)
	}
	defaultInstances := cfg.Instances == 0
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Store{backing: backing, cfg: cfg, obs: cfg.Observer, clock: cfg.Clock, epoch: time.Now(), stop: make(chan struct{})}
	if s.obs == nil {
		s.obs = nopObserver{}
	}
	s.epochU = s.epoch.UnixMicro()
	s.refunder, _ = backing.(sluice.Refunder)
	s.counter, _ = backing.(sluice.InstanceCounter)
	if defaultInstances && s.refunder != nil && s.counter == nil {
		cfg.Logger.Warn("sluice: lease store assumes one instance: set lease.Config.Instances to the number of processes sharing the store, which bounds the drift (Instances × K)")
	}
	if ip, ok := backing.(sluice.InProcessStore); !ok || !ip.InProcess() {
		s.refusals = refusal.New(cfg.RememberRefusals, cfg.RefusalMemory, func() int64 { return s.now() * int64(time.Microsecond) })
	}
	s.table.init(cfg.MaxKeys)
	s.hot = hotkey.NewTable(cfg.MaxRules, s.hotConfig)
	if cfg.SweepInterval > 0 {
		s.done.Add(1)
		go s.sweepLoop(cfg.SweepInterval)
	}
	return s, nil
}

// InProcess answers for the backing store (see [sluice.InProcessStore]).
func (s *Store) InProcess() bool {
	ip, ok := s.backing.(sluice.InProcessStore)
	return ok && ip.InProcess()
}

func (s *Store) now() int64 {
	if s.clock == nil {
		return s.epochU + int64(time.Since(s.epoch)/time.Microsecond)
	}
	return s.clock.Now().UnixMicro()
}

func errClosed() error { return &sluice.StoreError{Op: "lease: take", Kind: sluice.ErrClosed} }

// Take decides hits (see [sluice.Store]) all-or-nothing. A hit of a
// leased bucket is served from the local lease with no I/O when the lease
// holds its cost; otherwise the hits that need the backing store (refills
// of up to K tokens, and the hits that pass through) go to it in one call.
// The local part is decided first, so the backing store is called only
// for a request every local lease admits, and a request the backing store
// refuses gives back what it reserved locally. A backing-store error is
// returned as it is, so the rule's on_fail applies; leases keep serving
// until they expire.
func (s *Store) Take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	if len(hits) == 1 && len(out) > 0 && s.takeLocal(&hits[0], &out[0]) {
		return nil
	}
	if err := sluice.CheckHits(hits, out); err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	s.calls.RLock()
	defer s.calls.RUnlock()
	if s.closed.Load() {
		return errClosed()
	}
	if s.refusals.Answer(hits, out) {
		s.observeAnswered(hits)
		return nil
	}
	sent := s.refusals.Now()
	err := s.takeSlow(ctx, hits, out)
	if err == nil {
		s.refusals.Remember(hits, out, sent)
	}
	return err
}

// TakeLocal decides hits with no I/O when every one of them is a plain hit
// its lease can serve, and reports true; otherwise it decides and consumes
// nothing and reports false (see [sluice.LocalStore]). The middleware
// calls it before Take, so a request served from leases needs no context
// with a deadline.
func (s *Store) TakeLocal(hits []sluice.Hit, out []sluice.Result) bool {
	if len(out) < len(hits) || len(hits) == 0 {
		return false
	}
	if !s.closed.Load() && s.refusals.Answer(hits, out) {
		s.observeAnswered(hits)
		return true
	}
	for i := range hits {
		if !s.takeLocal(&hits[i], &out[i]) {
			// Give back what the earlier hits took: the request is not
			// decided here.
			for j := range i {
				if e := s.table.get(hits[j].Key); e != nil && e.keep(out[j].Receipt.Mark) {
					e.left.Add(out[j].Receipt.Taken)
				}
			}
			return false
		}
	}
	return true
}

// takeLocal serves a plain hit from a live lease: no lock, no I/O, no
// allocation. It reports false when the hit needs the general path.
func (s *Store) takeLocal(h *sluice.Hit, out *sluice.Result) bool {
	if h.Peek || h.Force || h.Shadow || h.MinCost != 0 || h.Cost < 0 || h.Key == "" || s.closed.Load() {
		return false
	}
	e := s.table.get(h.Key)
	if e == nil || e.limit != h.Limit || e.alg != h.Algorithm {
		return false
	}
	now := s.now()
	c := h.Units()
	gen := e.gen.Load()
	for {
		l := e.left.Load()
		if l < c || !e.live(now) {
			return false
		}
		if e.left.CompareAndSwap(l, l-c) {
			e.report(now, l-c, out)
			out.Allowed = true
			out.Receipt = localReceipt(c, gen, e.served.Add(c))
			return true
		}
	}
}

// report fills r with the lease's view: Remaining is the tokens held plus
// what the backing bucket holds as of the last refill (for a token bucket,
// refilled at its rate since, as a process alone would see it); ResetAfter
// is when that bucket is full again, counting the tokens held as back in
// it.
func (e *entry) report(now, left int64, r *sluice.Result) {
	fullAt := e.fullAt.Load()
	*r = sluice.Result{Limit: e.limit}
	if e.interval > 0 {
		capacity := e.limit.Capacity()
		backing := min(capacity, max(0, capacity+floorDiv(now-fullAt, e.interval)))
		r.Remaining = min(capacity, left+backing)
		r.ResetAfter = time.Duration(max(0, fullAt-now-left*e.interval)) * time.Microsecond
		return
	}
	r.Remaining = min(e.limit.Rate, left+e.base.Load())
	r.ResetAfter = time.Duration(max(0, fullAt-now)) * time.Microsecond
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// policy returns h's lease policy.
func (s *Store) policy(h *sluice.Hit) *sluice.LeasePolicy {
	if h.Lease != nil {
		return h.Lease
	}
	return s.cfg.Default
}

// Sweep gives back the unused tokens of every lease that has expired, in
// one refund call to the backing store, and forgets keys that hold
// nothing. The sweeper calls it every Config.SweepInterval; tests with a
// fake clock call it directly. A refund that fails is counted and logged,
// never retried.
func (s *Store) Sweep(ctx context.Context) error {
	return s.giveBack(ctx, false)
}

// Close stops the sweeper, waits for the calls in flight (refills and
// refunds) to end, and gives back the unused tokens of every lease, live
// or expired, in one refund call. Take then fails with
// [sluice.ErrClosed]. When ctx ends before the calls in flight do, Close
// gives back what the leases hold then; what a refill still in flight
// takes afterwards is lost as in a crash (at most K per key), and counted
// ([Observer.LeaseLost]). Close does
// not close the backing store.
func (s *Store) Close(ctx context.Context) error {
	if s.closed.Swap(true) {
		return nil
	}
	close(s.stop)
	s.done.Wait()
	drained := make(chan struct{})
	go func() {
		s.calls.Lock() // every call in flight has ended; later ones see closed
		close(drained)
		s.calls.Unlock()
	}()
	select {
	case <-drained:
	case <-ctx.Done():
		s.cfg.Logger.Warn("sluice: lease store closed with calls in flight", "err", ctx.Err())
	}
	s.givenBack.Store(true)
	return s.giveBack(ctx, true)
}

func (s *Store) sweepLoop(every time.Duration) {
	defer s.done.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), every)
			_ = s.Sweep(ctx) // counted and logged inside
			cancel()
		}
	}
}
