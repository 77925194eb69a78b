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
// of instances sharing it.
type localFallback struct {
	store     *memstore.Store
	instances func() int64 // at least 1
	lastSweep atomic.Int64 // Unix nanoseconds
}

// newLocalFallback returns the fallback of a decider on store: n instances
// when n is positive, else as many as the store counts (at least 1).
func newLocalFallback(n int, store sluice.Store) *localFallback {
	// No sweeper goroutine (nothing to close): decide sweeps now and then.
	f := &localFallback{store: memstore.New(memstore.Config{SweepInterval: -1})}
	counter, ok := store.(sluice.InstanceCounter)
	switch {
	case n > 0:
		f.instances = func() int64 { return int64(n) }
	case ok:
		f.instances = func() int64 { return max(int64(counter.Instances()), 1) }
	default:
		f.instances = func() int64 { return 1 }
	}
	return f
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
	if now := time.Now().UnixNano(); now-f.lastSweep.Load() > int64(time.Minute) {
		f.lastSweep.Store(now)
		f.store.Sweep()
	}
	var local []sluice.Hit
	var idx []int
	n := f.instances()
	for i, r := range matched {
		if r.OnFail != rules.FailLocal || !failed[i] {
			continue
		}
		h := hits[i]
		h.Limit = share(h.Limit, n)
		if err := h.Algorithm.ValidateLimit(h.Limit); err != nil {
			return false, fmt.Errorf("decide: local share of rule %q: %w", r.Name, err)
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
