package lease

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/refusal"
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
	hot       *hotKeys
	scratches sync.Pool // of *scratch
	closed    atomic.Bool
	givenBack atomic.Bool  // Close is giving every lease back: later refills' tokens are lost
	calls     sync.RWMutex // held for reading by calls that may change leases; Close takes it to wait for them
	stop      chan struct{}
	done      sync.WaitGroup
	gens      atomic.Int64           // the last lease generation: generations are never reused, even by a key forgotten and seen again
	refusals  *refusal.Memory        // nil when off or over an in-process store
	record    *refusal.Record        // what it last said of each bucket; nil over an in-process store
	counter   sluice.InstanceCounter // the backing store's, or nil
}

var (
	_ sluice.Refunder        = (*Store)(nil)
	_ sluice.Resetter        = (*Store)(nil)
	_ sluice.InProcessStore  = (*Store)(nil)
	_ sluice.LocalStore      = (*Store)(nil)
	_ sluice.InstanceCounter = (*Store)(nil)
	_ sluice.ObserverSource  = (*Store)(nil)
)

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
		s.record = refusal.NewRecord(0, s.nanos)
		s.refusals = refusal.New(cfg.RememberRefusals, cfg.RefusalMemory, s.nanos).Knowing(s.record)
	}
	s.table.init(cfg.MaxKeys)
	s.hot = newHotKeys(cfg.MaxRules, cfg.TopK, cfg.Logger, s.obs)
	if cfg.SweepInterval > 0 {
		s.done.Add(1)
		go s.sweepLoop(cfg.SweepInterval)
	}
	return s, nil
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

// InProcess answers for the backing store (see [sluice.InProcessStore]).
func (s *Store) InProcess() bool {
	ip, ok := s.backing.(sluice.InProcessStore)
	return ok && ip.InProcess()
}

// Observer returns the backing store's observer (see
// [sluice.ObserverSource]), or nil when it has none: the Redis store's
// Config.Events when that is a [sluice.Observer], as the metrics
// package's Collector is. A middleware on the lease store so reports its
// decisions and store calls where it would on the backing store: a
// collector set as the Redis store's Config.Events sees them whether or
// not the store is wrapped in leases.
func (s *Store) Observer() sluice.Observer {
	if src, ok := s.backing.(sluice.ObserverSource); ok {
		return src.Observer()
	}
	return nil
}

// micros returns the time leases expire by, in µs.
func (s *Store) micros() int64 {
	if s.clock == nil {
		return s.epochU + int64(time.Since(s.epoch)/time.Microsecond)
	}
	return s.clock.Now().UnixMicro()
}

// nanos returns the time leases expire by, in ns: the clock of the memory
// of refusals and of the record.
func (s *Store) nanos() int64 { return s.micros() * int64(time.Microsecond) }

func errClosed() error { return &sluice.StoreError{Op: "lease: take", Kind: sluice.ErrClosed} }

// policyOf returns h's lease policy.
func (s *Store) policyOf(h *sluice.Hit) *sluice.LeasePolicy {
	if h.Lease != nil {
		return h.Lease
	}
	return s.cfg.Default
}

// ruleOf names h's rule for the observer.
func (s *Store) ruleOf(h *sluice.Hit) string {
	if p := s.policyOf(h); p != nil {
		return p.Rule
	}
	return ""
}

// kmax returns the largest lease h's bucket may take under pol: the drift
// bound for the instances sharing the backing store (at least 1), the
// store's cap and the policy's.
func (s *Store) kmax(h *sluice.Hit, pol *sluice.LeasePolicy) int64 {
	if unleased(h) {
		return 0
	}
	k := min(MaxLease(h.Limit, h.Algorithm, max(s.Instances(), 1), s.cfg.DriftBudget), s.cfg.MaxLease)
	if pol.MaxLease > 0 {
		k = min(k, pol.MaxLease)
	}
	if k < minLeaseForLeasing {
		return 0
	}
	return k
}

// Refund gives back what hits took (see [sluice.Refunder]). A hit served
// from a lease goes back into the key's current lease while it is live
// and no lease of the key went back since the one the hit was served from
// (refills in between do not matter; a fixed window's new window does);
// otherwise its tokens went back, or were lost, with the lease: the
// refund does nothing and is counted as lost (Observer.LeaseLost). Such a
// receipt gives each of its tokens back once: refunded again, or with a
// Receipt.Taken larger than the hit took, it gives back nothing more. The
// store tells apart the last 1,024 tokens served from a key's leases; the
// tokens of a hit served before them are counted as lost. A refund that
// gives tokens back clears the key's remembered denial. Other refunds go
// to the backing store, which bounds them as it does its own; over a
// backing store that is not a Refunder they are an error wrapping
// [sluice.ErrInvalidHit].
func (s *Store) Refund(ctx context.Context, refunds []sluice.Refund) error {
	if err := sluice.CheckRefunds(refunds); err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	s.calls.RLock()
	defer s.calls.RUnlock()
	if s.closed.Load() {
		return errClosed()
	}
	for i := range refunds { // tokens come back: what was refused may pass
		s.refusals.Forget(refunds[i].Hit.Key)
		s.record.Forget(refunds[i].Hit.Key)
	}
	now := s.micros()
	var pass []sluice.Refund
	for i := range refunds {
		if r := &refunds[i]; isLocal(r.Receipt) {
			s.refundLocal(now, r)
		} else {
			pass = append(pass, *r)
		}
	}
	if len(pass) == 0 {
		return nil
	}
	return s.refundBacking(ctx, pass)
}

// refundLocal gives back into its key's lease what a hit served from a
// lease took, when that lease may still take it; else counts it as lost.
func (s *Store) refundLocal(now int64, r *sluice.Refund) {
	e := s.table.get(r.Hit.Key)
	if e == nil {
		s.obs.LeaseLost(s.ruleOf(&r.Hit), r.Amount())
		return
	}
	if lost := e.refund(now, r.Receipt, r.Amount()); lost > 0 {
		s.obs.LeaseLost(e.policy.Rule, lost)
	}
}

// refundBacking passes refunds to the backing store. The tokens are back
// in the bucket: the keys' remembered denials no longer stand.
func (s *Store) refundBacking(ctx context.Context, pass []sluice.Refund) error {
	for i := range pass {
		if e := s.table.get(pass[i].Hit.Key); e != nil {
			e.clearDenial()
		}
	}
	if s.refunder == nil {
		return fmt.Errorf("lease: %w: the backing store %T gives nothing back", sluice.ErrInvalidHit, s.backing)
	}
	if err := s.refunder.Refund(ctx, pass); err != nil {
		s.refundFailed(pass)
		return err
	}
	return nil
}

// refundFailed tells the observer of refunds the backing store failed to
// take.
func (s *Store) refundFailed(refunds []sluice.Refund) {
	ro, ok := s.obs.(RefundObserver)
	if !ok {
		return
	}
	for i := range refunds {
		ro.RefundFailed(s.ruleOf(&refunds[i].Hit), 1)
	}
}

// Reset drops the leases of hits' buckets without giving their tokens
// back, and resets the buckets in the backing store (see
// [sluice.Resetter]), with the sub-buckets of a key its rule splits; a
// hot key is forgotten by its rule's detector (it cools; its traffic can
// make it hot again); over a backing store that is not a Resetter it is an
// error wrapping [sluice.ErrInvalidHit].
func (s *Store) Reset(ctx context.Context, hits []sluice.Hit) error {
	for i := range hits {
		if hits[i].Key == "" {
			return fmt.Errorf("lease: %w: empty key", sluice.ErrInvalidHit)
		}
	}
	rs, ok := s.backing.(sluice.Resetter)
	if !ok {
		return fmt.Errorf("lease: %w: the backing store %T cannot reset", sluice.ErrInvalidHit, s.backing)
	}
	if err := rs.Reset(ctx, s.withSubBuckets(hits)); err != nil {
		return err
	}
	for i := range hits {
		if pol := s.policyOf(&hits[i]); pol != nil {
			s.hot.rules.Forget(pol, hits[i].Key)
		}
		s.refusals.Forget(hits[i].Key)
		s.record.Forget(hits[i].Key)
	}
	for i := range hits {
		if e := s.table.get(hits[i].Key); e != nil {
			e.reset(&s.gens)
		}
	}
	return nil
}

// withSubBuckets returns hits with, for each hit whose rule splits hot
// keys, the hits of its sub-buckets.
func (s *Store) withSubBuckets(hits []sluice.Hit) []sluice.Hit {
	out := hits
	for i := range hits {
		h := &hits[i]
		pol := s.policyOf(h)
		if pol == nil || pol.HotKeys.Split < 2 {
			continue
		}
		sub, ok := splitLimit(h.Limit, h.Algorithm, pol.HotKeys.Split, 1)
		if !ok {
			continue
		}
		if len(out) == len(hits) {
			out = append([]sluice.Hit(nil), hits...)
		}
		for _, k := range subKeys(h.Key, pol.HotKeys.Split) {
			sh := *h
			sh.Key, sh.Limit = k, sub
			out = append(out, sh)
		}
	}
	return out
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

// giveBack returns the unused tokens of expired leases (all: of every
// lease) to the backing store in one refund call, and forgets entries
// that hold nothing. A failed refund is counted and logged, never
// retried: a retry could give back twice.
func (s *Store) giveBack(ctx context.Context, all bool) error {
	now := s.micros()
	var refunds []sluice.Refund
	s.table.each(nil, nil, func(e *entry) bool {
		var lost int64
		var forget bool
		refunds, lost, forget = e.sweep(now, all, s.refunder != nil, refunds)
		if lost > 0 {
			s.obs.LeaseLost(e.policy.Rule, lost)
		}
		return forget
	})
	s.obs.LeasedKeys(s.table.len())
	if len(refunds) == 0 {
		return nil
	}
	if err := s.refunder.Refund(ctx, refunds); err != nil {
		s.refundFailed(refunds)
		for i := range refunds {
			s.obs.LeaseLost(refunds[i].Hit.Lease.Rule, refunds[i].Amount())
		}
		s.cfg.Logger.Warn("sluice: lease tokens not given back", "refunds", len(refunds), "err", err)
		return fmt.Errorf("lease: give back: %w", err)
	}
	for i := range refunds {
		s.obs.LeaseReturned(refunds[i].Hit.Lease.Rule, refunds[i].Amount())
	}
	return nil
}
