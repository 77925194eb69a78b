package decide

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
)

// localFallback decides rules whose on_fail is local while the store is
// failing: an in-process memstore, each rule's limit divided by the number
// of instances sharing it. A bucket starts where the store last left it
// when the store keeps a record of that ([sluice.BucketRecorder]): its
// share of what the store last said remained, counted forward; else full.
type localFallback struct {
	store     *memstore.Store
	record    sluice.BucketRecorder  // nil: every bucket starts full
	instances func(now int64) int64  // at least 1; now in Unix nanoseconds
	lastSweep atomic.Int64           // Unix nanoseconds
	count     *heldCount             // the store's count of instances; nil when not counted
	counter   sluice.InstanceCounter // the store, when count is not nil
	sampledAt atomic.Int64           // when count last read counter (see sample), Unix nanoseconds
}

// newLocalFallback returns the fallback of a decider on store: n instances
// when n is positive, else as many as the store counts (at least 1). Its
// store tells the time by clock, the decider's (nil: the system's), the
// clock the refreshes of the slots it gives are timed and measured by.
func newLocalFallback(n int, store sluice.Store, clock sluice.Clock) *localFallback {
	// No sweeper goroutine (nothing to close): decide sweeps now and then.
	f := &localFallback{store: memstore.New(memstore.Config{SweepInterval: -1, Clock: clock})}
	f.record, _ = store.(sluice.BucketRecorder)
	counter, ok := store.(sluice.InstanceCounter)
	switch {
	case n > 0:
		f.instances = func(int64) int64 { return int64(n) }
	case ok:
		f.count, f.counter = &heldCount{}, counter
		f.instances = func(now int64) int64 { return f.count.get(int64(counter.Instances()), now) }
	default:
		f.instances = func(int64) int64 { return 1 }
	}
	return f
}

// sampleEvery is how often, at most, the decider reads the store's
// instance count while the store answers (see [localFallback.sample]).
const sampleEvery = time.Second

// sample reads the store's instance count into the held count at now
// (Unix nanoseconds), after a store call that succeeded, at most once per
// sampleEvery: so the count the fallback divides by is the largest of the
// minute before the store failed, not only of the minutes it failed in.
// An instance counted out a moment before a failure is still counted. It
// takes no lock and allocates nothing; the calls in between cost an
// atomic load.
func (f *localFallback) sample(now int64) {
	if f.count == nil {
		return
	}
	last := f.sampledAt.Load()
	if now-last < int64(sampleEvery) || !f.sampledAt.CompareAndSwap(last, now) {
		return
	}
	f.count.get(int64(f.counter.Instances()), now)
}

// countHold is how long the local fallback holds the largest instance
// count the store reported: a count that falls is believed only once it
// has stayed lower that long.
const countHold = time.Minute

// heldCount is the instance count the local fallback divides limits by:
// the store's, read while the store answers (see [localFallback.sample])
// and when the fallback decides, but held at its largest for countHold. A store counts the
// instances that refreshed their presence lately; a process starved of
// CPU refreshes late, so the others count it out while it still decides,
// and each would take a larger share of the limit just when the store is
// failing them. An instance that really left costs the others a smaller
// share for countHold, which under-admits: the safe side.
type heldCount struct {
	// peak is the largest count within countHold (low 32 bits) and the
	// number of times it was set (high 32 bits, wrapping), so that a
	// compare-and-swap fails on a peak reported again meanwhile, even
	// with the same count.
	peak   atomic.Uint64
	seenAt atomic.Int64 // when peak was last reported, Unix nanoseconds
}

// get returns the count to divide by at now, the store reporting n: the
// held peak while it was reported within countHold, else n; at least 1.
// Concurrent callers lose no peak: n replaces the peak by a
// compare-and-swap, so of counts reported at once the largest is held. It
// takes no lock and allocates nothing.
func (c *heldCount) get(n, now int64) int64 {
	n = min(max(n, 1), 1<<32-1) // the peak holds 32 bits
	for {
		// The peak is read before seenAt, and a caller setting it sets
		// seenAt before swapping it in: seenAt, read after, is never
		// older than the report of the peak read, so a peak just
		// reported is never taken for one whose hold is over.
		old := c.peak.Load()
		peak := int64(uint32(old))
		if n < peak && now-c.seenAt.Load() < int64(countHold) {
			return peak
		}
		// n is the count from now on: the peak or above, or the peak's
		// hold is over.
		for seen := c.seenAt.Load(); seen < now && !c.seenAt.CompareAndSwap(seen, now); seen = c.seenAt.Load() {
		}
		if c.peak.CompareAndSwap(old, (old>>32+1)<<32|uint64(n)) {
			return n
		}
	}
}

// share returns l divided among n instances: at least 1 per period.
func share(l sluice.Limit, n int64) sluice.Limit {
	if n <= 1 {
		return l
	}
	l.Rate = max(l.Rate/n, 1)
	if l.Burst != 0 {
		l.Burst = max(l.Burst/n, 1)
	}
	return l
}

// decide decides the matched rules whose policy is local, each on its own
// share, into out (indexed like matched), and reports whether they all
// passed. Only the rules in failed take part. The decision is all or
// nothing, like the store's.
func (f *localFallback) decide(matched []*rules.Rule, hits []sluice.Hit, out []sluice.Result, failed, mask []bool) (bool, error) {
	now := time.Now().UnixNano()
	if now-f.lastSweep.Load() > int64(time.Minute) {
		f.lastSweep.Store(now)
		f.store.Sweep()
	}
	var local []sluice.Hit
	var idx []int
	n := f.instances(now)
	for i, r := range matched {
		if r.OnFail != rules.FailLocal || !failed[i] {
			continue
		}
		h := hits[i]
		h.Limit = share(h.Limit, n)
		if err := h.Algorithm.ValidateLimit(h.Limit); err != nil {
			return false, fmt.Errorf("decide: local share of rule %q: %w", r.Name, err)
		}
		if err := f.seed(&hits[i], &h, n); err != nil {
			return false, err
		}
		local = append(local, h)
		idx = append(idx, i)
	}
	if len(local) == 0 {
		return true, nil
	}
	res := make([]sluice.Result, len(local))
	if err := f.store.Take(context.Background(), local, res); err != nil {
		return false, err
	}
	for j, i := range idx {
		out[i] = res[j]
		mask[i] = true
	}
	return sluice.Admitted(local, res), nil
}

// seed starts the local bucket of local, the share of hit among n
// instances, from what the store last said of hit's bucket, the first
// time the fallback decides it after the store said it: its share of
// what remained then, counted forward, so that a client the store had
// just refused or left with little does not get a fresh full share. A
// bucket the store has no record of (never decided here, evicted from its
// bounded record) keeps its local state, full when new.
func (f *localFallback) seed(hit, local *sluice.Hit, n int64) error {
	if f.record == nil || hit.Concurrency { // the slots in flight are not known
		return nil
	}
	st, ok := f.record.ClaimBucket(hit)
	if !ok {
		return nil
	}
	capacity := local.Limit.Capacity()
	left := min(st.Remaining/n, capacity)
	bucket := sluice.Hit{Key: local.Key, Group: local.Group, Limit: local.Limit, Algorithm: local.Algorithm}
	ctx := context.Background()
	if err := f.store.Reset(ctx, []sluice.Hit{bucket}); err != nil {
		return err
	}
	if spent := capacity - left; spent > 0 {
		bucket.Cost, bucket.Force = spent, true
		var res [1]sluice.Result
		if err := f.store.Take(ctx, []sluice.Hit{bucket}, res[:]); err != nil {
			return err
		}
	}
	return nil
}

// localSlot reports whether rule i's hit holds a concurrency slot the
// local fallback gave it, in the fallback's own store.
func (o *Outcome) localSlot(i int) bool {
	h := &o.Hits[i]
	return o.Local[i] && h.Concurrency && !h.Peek && o.Results[i].Receipt.Taken > 0
}

// release frees the slots the fallback gave the concurrency rules of o, a
// request that is over, in its own store: by their receipts as their last
// refresh left them (see [Outcome.stopHolding]).
func (f *localFallback) release(o *Outcome) {
	var refunds []sluice.Refund
	for i := range o.Hits {
		if o.localSlot(i) {
			refunds = append(refunds, sluice.Refund{Hit: o.Hits[i], Receipt: o.Results[i].Receipt})
		}
	}
	if len(refunds) > 0 {
		_ = f.store.Refund(context.Background(), refunds) // in process: fails only for a hit Check refuses, which it took
	}
}
