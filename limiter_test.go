package sluice_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// countingStore counts the calls that reach the store it wraps.
type countingStore struct {
	sluice.Store
	calls atomic.Int64
}

func (s *countingStore) Take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	s.calls.Add(1)
	return s.Store.Take(ctx, hits, out)
}

func newMemLimiter(t testing.TB, limit sluice.Limit, opts ...sluice.LimiterOption) (*sluice.Limiter, *countingStore, *storetest.Clock) {
	t.Helper()
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	mem := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1})
	t.Cleanup(func() { mem.Close(context.Background()) })
	cs := &countingStore{Store: mem}
	l, err := sluice.NewLimiter(cs, limit, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l, cs, clock
}

func TestLimiterRefusesBadInputBeforeTheStore(t *testing.T) {
	l, cs, _ := newMemLimiter(t, sluice.PerSecond(5))
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"Allow empty key", func() error { _, err := l.Allow(ctx, ""); return err }},
		{"AllowN empty key", func() error { _, err := l.AllowN(ctx, "", 1); return err }},
		{"AllowN zero", func() error { _, err := l.AllowN(ctx, "k", 0); return err }},
		{"AllowN negative", func() error { _, err := l.AllowN(ctx, "k", -3); return err }},
		{"Peek empty key", func() error { _, err := l.Peek(ctx, ""); return err }},
		{"Wait empty key", func() error { return l.Wait(ctx, "") }},
		{"WaitN negative", func() error { return l.WaitN(ctx, "k", -1) }},
		{"Reset empty key", func() error { return l.Reset(ctx, "") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, sluice.ErrInvalidHit) {
				t.Fatalf("got %v, want an error wrapping ErrInvalidHit", err)
			}
		})
	}
	if n := cs.calls.Load(); n != 0 {
		t.Fatalf("bad input reached the store %d times", n)
	}
}

func TestNewLimiterValidates(t *testing.T) {
	mem := memstore.New(memstore.Config{SweepInterval: -1})
	defer mem.Close(context.Background())
	for _, tc := range []struct {
		name  string
		store sluice.Store
		limit sluice.Limit
		opts  []sluice.LimiterOption
		want  error
	}{
		{"nil store", nil, sluice.PerSecond(1), nil, sluice.ErrInvalidConfig},
		{"zero limit", mem, sluice.Limit{}, nil, sluice.ErrInvalidLimit},
		{"burst on a window", mem, sluice.PerSecond(5).WithBurst(9), []sluice.LimiterOption{sluice.WithAlgorithm(sluice.FixedWindow)}, sluice.ErrInvalidLimit},
		{"unknown algorithm", mem, sluice.PerSecond(5), []sluice.LimiterOption{sluice.WithAlgorithm(9)}, sluice.ErrInvalidLimit},
		{"nil timer", mem, sluice.PerSecond(5), []sluice.LimiterOption{sluice.WithWaitClock(nil)}, sluice.ErrInvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := sluice.NewLimiter(tc.store, tc.limit, tc.opts...)
			if l != nil || !errors.Is(err, tc.want) {
				t.Fatalf("got %v, %v; want an error wrapping %v", l, err, tc.want)
			}
		})
	}
}

// waitClock is a [sluice.WaitClock] of two functions.
type waitClock struct {
	now   func() time.Time
	timer func(d time.Duration) (<-chan time.Time, func() bool)
}

func (c waitClock) Now() time.Time { return c.now() }

func (c waitClock) Timer(d time.Duration) (<-chan time.Time, func() bool) { return c.timer(d) }

// TestLimiterWaitBeyondDeadlineReturnsAtOnce compares the deadline with
// the wait clock, not the system clock: the deadlines are decades away in
// real time, and only the fake clock's reading refuses the wait.
func TestLimiterWaitBeyondDeadlineReturnsAtOnce(t *testing.T) {
	started := 0
	fake := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	stopWaiting := func() {}
	l, _, _ := newMemLimiter(t, sluice.PerMinute(1), sluice.WithWaitClock(waitClock{
		now: func() time.Time { return fake },
		timer: func(time.Duration) (<-chan time.Time, func() bool) {
			started++
			stopWaiting() // a wait that started must not hang the test
			return make(chan time.Time), func() bool { return true }
		},
	}))
	ctx, cancel := context.WithDeadline(context.Background(), fake.Add(time.Hour))
	defer cancel()
	if err := l.Wait(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithDeadline(context.Background(), fake.Add(30*time.Second))
	defer cancelShort()
	stopWaiting = cancelShort
	if err := l.Wait(short, "k"); !errors.Is(err, context.DeadlineExceeded) || started != 0 {
		t.Fatalf("a wait of 1m under a 30s deadline: %v after %d timers, want DeadlineExceeded at once", err, started)
	}
}

// TestLimiterWaitRealTimerLeavesNothingRunning cancels a Wait sleeping on
// a real timer: Wait returns the cause, and no goroutine outlives it.
func TestLimiterWaitRealTimerLeavesNothingRunning(t *testing.T) {
	before := runtime.NumGoroutine()
	var stopped atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	l, _, _ := newMemLimiter(t, sluice.PerHour(1), sluice.WithWaitClock(waitClock{now: time.Now, timer: func(d time.Duration) (<-chan time.Time, func() bool) {
		tm := time.NewTimer(d)
		cancel()
		return tm.C, func() bool { ok := tm.Stop(); stopped.Store(ok); return ok }
	}}))
	if r, err := l.Allow(ctx, "k"); err != nil || !r.Allowed {
		t.Fatal(r, err)
	}
	if err := l.Wait(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait: %v, want context.Canceled", err)
	}
	if !stopped.Load() {
		t.Fatal("Wait returned without stopping its timer")
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Fatalf("%d goroutines before Wait, %d after", before, after)
	}
}

func TestLimiterResetNeedsAResetter(t *testing.T) {
	mem := memstore.New(memstore.Config{SweepInterval: -1})
	defer mem.Close(context.Background())
	l, err := sluice.NewLimiter(struct{ sluice.Store }{mem}, sluice.PerSecond(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Reset(context.Background(), "k"); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Reset on a store without Reset: %v, want ErrUnsupported", err)
	}
}

func TestLimiterAllowAllocatesNothing(t *testing.T) {
	l, _, _ := newMemLimiter(t, sluice.PerSecond(1000))
	ctx := context.Background()
	l.Allow(ctx, "tenant-1") // the bucket exists from here on
	if n := testing.AllocsPerRun(100, func() { l.Allow(ctx, "tenant-1") }); n != 0 {
		t.Fatalf("Allow: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { l.Peek(ctx, "tenant-1") }); n != 0 {
		t.Fatalf("Peek: %v allocations, want 0", n)
	}
}

func BenchmarkLimiterAllow(b *testing.B) {
	l, _, _ := newMemLimiter(b, sluice.PerSecond(1_000_000))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		l.Allow(ctx, "tenant-1")
	}
}

func BenchmarkLimiterAllowParallel(b *testing.B) {
	l, _, _ := newMemLimiter(b, sluice.PerSecond(1_000_000))
	keys := []string{"tenant-1", "tenant-2", "tenant-3", "tenant-4", "tenant-5", "tenant-6", "tenant-7", "tenant-8"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for i := 0; pb.Next(); i++ {
			l.Allow(ctx, keys[i%len(keys)])
		}
	})
}

// BenchmarkStoreTake is the floor under BenchmarkLimiterAllow: the same
// decision through Store.Take with slices kept by the caller.
func BenchmarkStoreTake(b *testing.B) {
	_, cs, _ := newMemLimiter(b, sluice.PerSecond(1_000_000))
	ctx := context.Background()
	hits := []sluice.Hit{{Key: "tenant-1", Limit: sluice.PerSecond(1_000_000), Cost: 1}}
	out := make([]sluice.Result, 1)
	b.ReportAllocs()
	for b.Loop() {
		cs.Take(ctx, hits, out)
	}
}
