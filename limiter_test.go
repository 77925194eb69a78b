package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
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

// WithPenalty is checked at construction, as a rule's penalty is: a
// positive block of whole microseconds up to MaxBlock, an after not
// negative (0 means 1), not with the sliding log, whichever order the
// options come in.
func TestWithPenaltyValidates(t *testing.T) {
	mem := memstore.New(memstore.Config{SweepInterval: -1})
	defer mem.Close(context.Background())
	slidingLog := sluice.WithAlgorithm(sluice.SlidingLog)
	for _, tc := range []struct {
		name  string
		limit sluice.Limit
		opts  []sluice.LimiterOption
		want  string // "" for valid
	}{
		{"block", sluice.PerMinute(5), []sluice.LimiterOption{sluice.WithPenalty(15*time.Minute, 0)}, ""},
		{"after", sluice.PerMinute(5), []sluice.LimiterOption{sluice.WithPenalty(time.Hour, 5)}, ""},
		{"the longest block", sluice.PerMinute(5), []sluice.LimiterOption{sluice.WithPenalty(sluice.MaxBlock, 1)}, ""},
		{"a microsecond", sluice.PerMinute(5), []sluice.LimiterOption{sluice.WithPenalty(time.Microsecond, 1)}, ""},
		{"fixed window", sluice.PerMinute(5), []sluice.LimiterOption{sluice.WithAlgorithm(sluice.FixedWindow), sluice.WithPenalty(time.Hour, 2)}, ""},
		{"sliding window", sluice.PerMinute(5), []sluice.LimiterOption{sluice.WithPenalty(time.Hour, 2), sluice.WithAlgorithm(sluice.SlidingWindow)}, ""},
		{"calendar", sluice.PerCalendar(1000, sluice.Day, nil), []sluice.LimiterOption{sluice.WithPenalty(time.Hour, 3)}, ""},
		{"no block", sluice.PerMinute(5), []sluice.LimiterOption{sluice.WithPenalty(0, 2)}, "a penalty needs a positive block"},
		{"negative block", sluice.PerMinute(5), []sluice.LimiterOption{sluice.WithPenalty(-time.Minute, 0)}, "a penalty needs a positive block"},
		{"over 30 days", sluice.PerMinute(5), []sluice.LimiterOption{sluice.WithPenalty(sluice.MaxBlock+time.Hour, 0)}, "over the longest block"},
		{"a fraction of a microsecond", sluice.PerMinute(5), []sluice.LimiterOption{sluice.WithPenalty(time.Second+500*time.Nanosecond, 0)}, "whole number of microseconds"},
		{"negative after", sluice.PerMinute(5), []sluice.LimiterOption{sluice.WithPenalty(time.Hour, -1)}, "at least 1"},
		{"sliding log after", sluice.PerMinute(5), []sluice.LimiterOption{slidingLog, sluice.WithPenalty(time.Hour, 0)}, "not with the sliding log"},
		{"sliding log before", sluice.PerMinute(5), []sluice.LimiterOption{sluice.WithPenalty(time.Hour, 0), slidingLog}, "not with the sliding log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := sluice.NewLimiter(mem, tc.limit, tc.opts...)
			switch {
			case tc.want == "" && (err != nil || l == nil):
				t.Fatalf("got %v, %v; want a limiter", l, err)
			case tc.want != "" && (l != nil || !errors.Is(err, sluice.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, %v; want an error wrapping ErrInvalidConfig saying %q", l, err, tc.want)
			}
		})
	}
}

// A Limiter with a penalty: the after-th refusal within the period starts
// the block; from then on Allow, Peek and AllowN on the key are refused as
// blocked, with RetryAfter the time left, whatever the bucket holds, and
// other keys are not; Reset lifts the block; Wait sleeps out the rest of
// one, once, and then passes.
func TestLimiterPenalty(t *testing.T) {
	for _, tc := range []struct {
		alg   sluice.Algorithm
		after int64
	}{
		{sluice.TokenBucket, 0},
		{sluice.TokenBucket, 3},
		{sluice.FixedWindow, 1},
		{sluice.SlidingWindow, 2},
	} {
		t.Run(fmt.Sprint(tc.alg, "/after=", tc.after), func(t *testing.T) {
			const block = 15 * time.Minute
			clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
			mem := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1})
			t.Cleanup(func() { mem.Close(context.Background()) })
			l, err := sluice.NewLimiter(mem, sluice.PerMinute(2), sluice.WithAlgorithm(tc.alg), sluice.WithPenalty(block, tc.after), sluice.WithWaitClock(clock))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			const key = "login:alice"
			blocked := func(what string, r sluice.Result, err error, left time.Duration, started bool) {
				t.Helper()
				if err != nil || r.Allowed || !r.Blocked || r.BlockStarted != started || r.RetryAfter != left || r.Remaining != 0 {
					t.Fatalf("%s: %+v, %v; want blocked (started %v) with RetryAfter %v", what, r, err, started, left)
				}
			}
			// startBlock takes the key's bucket down, then is refused until
			// the block starts: at the after-th refusal (the first for 0).
			startBlock := func() {
				t.Helper()
				refusals := int64(0)
				for range 10 {
					r, err := l.Allow(ctx, key)
					switch {
					case err != nil:
						t.Fatal(err)
					case r.Allowed:
						continue
					}
					refusals++
					if refusals < max(tc.after, 1) {
						if r.Blocked || r.RetryAfter <= 0 {
							t.Fatalf("refusal %d: %+v; want refused, not blocked", refusals, r)
						}
						continue
					}
					blocked(fmt.Sprintf("refusal %d, the one that starts the block", refusals), r, nil, block, true)
					return
				}
				t.Fatalf("no block after %d refusals", refusals)
			}
			startBlock()
			clock.Advance(5 * time.Minute) // the bucket is full again
			r, err := l.Allow(ctx, key)
			blocked("Allow 5 minutes in", r, err, block-5*time.Minute, false)
			r, err = l.Peek(ctx, key)
			blocked("Peek 5 minutes in", r, err, block-5*time.Minute, false)
			r, err = l.AllowN(ctx, key, 2)
			blocked("AllowN 5 minutes in", r, err, block-5*time.Minute, false)
			if u, err := l.Usage(ctx, key); err != nil || u.BlockedFor != block-5*time.Minute || u.Remaining != 0 {
				t.Fatalf("Usage 5 minutes in: %+v, %v; want blocked for %v, nothing remaining", u, err, block-5*time.Minute)
			}
			if u, err := l.Usage(ctx, "login:carol"); err != nil || u.BlockedFor != 0 {
				t.Fatalf("Usage of a key never refused: %+v, %v; want not blocked", u, err)
			}
			if r, err := l.Allow(ctx, "login:bob"); err != nil || !r.Allowed || r.Blocked {
				t.Fatalf("another key: %+v, %v; want allowed", r, err)
			}
			if err := l.Reset(ctx, key); err != nil {
				t.Fatal(err)
			}
			if r, err := l.Allow(ctx, key); err != nil || !r.Allowed || r.Blocked || r.Remaining != 1 {
				t.Fatalf("after Reset: %+v, %v; want allowed with 1 left", r, err)
			}
			startBlock()
			clock.Advance(time.Minute)
			before := clock.Now()
			if err := l.Wait(ctx, key); err != nil {
				t.Fatalf("Wait in a block: %v", err)
			}
			if slept := clock.Now().Sub(before); slept != block-time.Minute {
				t.Fatalf("Wait in a block with %v left slept %v", block-time.Minute, slept)
			}
		})
	}
}
