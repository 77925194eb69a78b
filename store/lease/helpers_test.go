package lease_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/leakcheck"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/redistest/redisstoretest"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// counting wraps a Refunder, counts its calls, and fails them on demand.
type counting struct {
	sluice.Refunder
	takes, refunds, hits atomic.Int64
	down                 atomic.Bool
	mu                   sync.Mutex
	keys                 map[string]int // backing hits by key, when not nil
}

var errDown = &sluice.StoreError{Op: "test: take", Kind: sluice.ErrUnavailable}

func (c *counting) Take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	if c.down.Load() {
		return errDown
	}
	c.takes.Add(1)
	c.hits.Add(int64(len(hits)))
	c.mu.Lock()
	if c.keys != nil {
		for i := range hits {
			c.keys[hits[i].Key]++
		}
	}
	c.mu.Unlock()
	return c.Refunder.Take(ctx, hits, out)
}

func (c *counting) Refund(ctx context.Context, r []sluice.Refund) error {
	if c.down.Load() {
		return errDown
	}
	c.refunds.Add(1)
	return c.Refunder.Refund(ctx, r)
}

func (c *counting) Reset(ctx context.Context, hits []sluice.Hit) error {
	return c.Refunder.(sluice.Resetter).Reset(ctx, hits)
}

// backing returns a memstore on a fake clock, wrapped to count calls.
func backing(t *testing.T) (*counting, *storetest.Clock) {
	t.Helper()
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	m := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1})
	t.Cleanup(func() { m.Close(context.Background()) })
	return &counting{Refunder: m}, clock
}

func take(t *testing.T, s sluice.Store, hits ...sluice.Hit) []sluice.Result {
	t.Helper()
	out := make([]sluice.Result, len(hits))
	if err := s.Take(context.Background(), hits, out); err != nil {
		t.Fatalf("Take: %v", err)
	}
	return out
}

// peek returns what the bucket of h holds in s, consuming nothing.
func peek(t *testing.T, s sluice.Store, h sluice.Hit) int64 {
	t.Helper()
	h.Peek, h.Cost, h.Lease = true, 1, nil
	return take(t, s, h)[0].Remaining
}

// noLeak fails t when goroutines started during f outlive it (see
// internal/leakcheck).
func noLeak(t *testing.T, f func()) {
	t.Helper()
	check := leakcheck.Check(t)
	f()
	check()
}

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu                       sync.Mutex
	refilled, returned, lost int64
	refills                  int
	refundFailures           int
	hot, cooled              map[string]int // by handling
	leasedKeys               int
}

func newRecorder() *recorder {
	return &recorder{hot: map[string]int{}, cooled: map[string]int{}}
}

func (r *recorder) LeaseRefilled(_ string, n int64) {
	r.mu.Lock()
	r.refilled += n
	r.refills++
	r.mu.Unlock()
}
func (r *recorder) LeaseReturned(_ string, n int64) { r.mu.Lock(); r.returned += n; r.mu.Unlock() }
func (r *recorder) LeaseLost(_ string, n int64)     { r.mu.Lock(); r.lost += n; r.mu.Unlock() }
func (r *recorder) RefundFailed(_ string, n int)    { r.mu.Lock(); r.refundFailures += n; r.mu.Unlock() }
func (r *recorder) LeasedKeys(n int)                { r.mu.Lock(); r.leasedKeys = n; r.mu.Unlock() }
func (r *recorder) HotKey(_ string, hot bool, handling string) {
	r.mu.Lock()
	if hot {
		r.hot[handling]++
	} else {
		r.cooled[handling]++
	}
	r.mu.Unlock()
}

// TestMain fails the package if any goroutine outlives the tests: the
// sweeper, the Redis clients and stores must stop once closed. Without
// redis-server it says, in one line, that the tests needing it were skipped.
func TestMain(m *testing.M) { leakcheck.Main(redisstoretest.Quiet(redistest.ReportSkips(m))) }

// takeFromLease takes h from s until a take is served from a lease, with
// no call to back, and returns its result; it fails t after 20 takes.
func takeFromLease(t *testing.T, s sluice.Store, back *counting, h sluice.Hit) sluice.Result {
	t.Helper()
	for range 20 {
		calls := back.takes.Load()
		if r := take(t, s, h)[0]; back.takes.Load() == calls {
			return r
		}
	}
	t.Fatalf("%s: 20 takes, none served from a lease", h.Key)
	return sluice.Result{}
}
