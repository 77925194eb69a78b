package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// testLimiter: a [sluice.Limiter] over the store refuses at the limit
// with the store's exact RetryAfter, peeks without consuming, waits
// exactly that RetryAfter and then passes, returns at once when
// cancelled (stopping its timer), and resets the bucket when the store
// is a Resetter; with a penalty, blocks a key it refused until Reset.
func testLimiter(t *testing.T, newHarness Factory) {
	for _, a := range algorithms {
		t.Run(a.alg.String(), func(t *testing.T) {
			h := newHarness(t)
			ctx := context.Background()
			key := uniqueKey(t, "limiter")
			l := testLimiterRefusesAndWaits(t, h, a.alg, a.limit, key)
			testLimiterCancelled(t, h, l, a.alg, a.limit, key)
			err := l.Reset(ctx, key)
			if _, ok := h.Store.(sluice.Resetter); !ok {
				if !errors.Is(err, errors.ErrUnsupported) {
					t.Fatalf("Reset on %T, not a Resetter: %v, want ErrUnsupported", h.Store, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r, err := l.Peek(ctx, key); err != nil || r.Remaining != 5 {
				t.Fatalf("after Reset: %+v, %v; want 5 remaining", r, err)
			}
		})
	}
	t.Run("Penalty", func(t *testing.T) { testLimiterPenalty(t, newHarness) })
}

// testLimiterPenalty: a Limiter with a penalty ([sluice.WithPenalty]) over
// the store: the refusal starts the block, every later Allow and Peek on
// the key is refused as blocked with RetryAfter the time left, whatever
// the bucket holds, and Reset lifts it when the store is a Resetter.
func testLimiterPenalty(t *testing.T, newHarness Factory) {
	const block = 15 * time.Minute
	h := newHarness(t)
	at := start()
	h.SetTime(at)
	l, err := sluice.NewLimiter(h.Store, sluice.PerMinute(2), sluice.WithPenalty(block, 0))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := uniqueKey(t, "penalty")
	blocked := func(what string, r sluice.Result, err error, left time.Duration, started bool) {
		t.Helper()
		if err != nil || r.Allowed || !r.Blocked || r.BlockStarted != started || r.RetryAfter != left || r.Remaining != 0 {
			t.Fatalf("%s: %+v, %v; want blocked (started %v) with RetryAfter %v", what, r, err, started, left)
		}
	}
	for i := range 2 {
		if r, err := l.Allow(ctx, key); err != nil || !r.Allowed || r.Blocked {
			t.Fatalf("Allow %d of 2 per minute: %+v, %v", i+1, r, err)
		}
	}
	r, err := l.Allow(ctx, key)
	blocked("the refusal that starts the block", r, err, block, true)
	h.SetTime(at.Add(5 * time.Minute)) // the bucket is full again
	r, err = l.Allow(ctx, key)
	blocked("Allow 5 minutes in", r, err, block-5*time.Minute, false)
	r, err = l.Peek(ctx, key)
	blocked("Peek 5 minutes in", r, err, block-5*time.Minute, false)
	if _, ok := h.Store.(sluice.Resetter); !ok {
		return
	}
	if err := l.Reset(ctx, key); err != nil {
		t.Fatal(err)
	}
	if r, err := l.Allow(ctx, key); err != nil || !r.Allowed || r.Blocked || r.Remaining != 1 {
		t.Fatalf("after Reset: %+v, %v; want allowed with 1 left", r, err)
	}
}

// testLimiterRefusesAndWaits takes key's bucket of 5 down to empty, with
// peeks on the way, and waits for a unit to come back on a clock whose
// timer moves the store's time: Wait sleeps once, for exactly the
// RetryAfter of the refusal. It returns the limiter, on that clock.
func testLimiterRefusesAndWaits(t *testing.T, h Harness, alg sluice.Algorithm, limit sluice.Limit, key string) *sluice.Limiter {
	t.Helper()
	now := windowStart(time.Second)
	h.SetTime(now)
	var mu sync.Mutex
	var waits []time.Duration
	timer := func(d time.Duration) (<-chan time.Time, func() bool) {
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, d)
		now = now.Add(d)
		h.SetTime(now)
		c := make(chan time.Time, 1)
		c <- now
		return c, func() bool { return false }
	}
	clock := waitClock{now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }, timer: timer}
	l, err := sluice.NewLimiter(h.Store, limit, sluice.WithAlgorithm(alg), sluice.WithWaitClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if r, err := l.AllowN(ctx, key, 4); err != nil || !r.Allowed || r.Remaining != 1 {
		t.Fatalf("AllowN(4) on a fresh bucket of 5: %+v, %v", r, err)
	}
	for range 3 {
		if r, err := l.Peek(ctx, key); err != nil || !r.Allowed || r.Remaining != 1 {
			t.Fatalf("Peek with 1 left: %+v, %v; want allowed, 1 remaining", r, err)
		}
	}
	if r, err := l.Allow(ctx, key); err != nil || !r.Allowed || r.Remaining != 0 {
		t.Fatalf("Allow with 1 left: %+v, %v", r, err)
	}
	refused, err := l.Allow(ctx, key)
	if err != nil || refused.Allowed || refused.RetryAfter <= 0 {
		t.Fatalf("Allow on an empty bucket: %+v, %v; want refused with a RetryAfter", refused, err)
	}
	peeked, err := l.Peek(ctx, key)
	if err != nil || peeked.RetryAfter != refused.RetryAfter {
		t.Fatalf("Peek on an empty bucket: %+v, %v; want RetryAfter %v", peeked, err, refused.RetryAfter)
	}
	if err := l.Wait(ctx, key); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if len(waits) != 1 || waits[0] != refused.RetryAfter {
		t.Fatalf("Wait slept %v, want once for exactly %v", waits, refused.RetryAfter)
	}
	if r, _ := l.Peek(ctx, key); alg == sluice.TokenBucket && r.Allowed {
		t.Fatalf("after Wait took the unit that came back: %+v, want refused", r)
	}
	return l
}

// testLimiterCancelled: a Wait cancelled while it waits returns the cause
// and stops its timer; a WaitN beyond the capacity fails at once with
// ErrUnsatisfiable. l drains a bucket for the Wait to wait on.
func testLimiterCancelled(t *testing.T, h Harness, l *sluice.Limiter, alg sluice.Algorithm, limit sluice.Limit, key string) {
	t.Helper()
	ctx := context.Background()
	drained := uniqueKey(t, "drained")
	if r, err := l.AllowN(ctx, drained, 5); err != nil || !r.Allowed {
		t.Fatalf("AllowN(5) on a fresh bucket of 5: %+v, %v", r, err)
	}
	cctx, cancel := context.WithCancelCause(ctx)
	stopped := false
	cl, err := sluice.NewLimiter(h.Store, limit, sluice.WithAlgorithm(alg),
		sluice.WithWaitClock(waitClock{now: time.Now, timer: func(time.Duration) (<-chan time.Time, func() bool) {
			cancel(errGaveUp)
			return make(chan time.Time), func() bool { stopped = true; return true }
		}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Wait(cctx, drained); !errors.Is(err, errGaveUp) || !stopped {
		t.Fatalf("Wait cancelled: %v, timer stopped %v; want the cause and a stopped timer", err, stopped)
	}
	if err := cl.WaitN(ctx, key, 6); !errors.Is(err, sluice.ErrUnsatisfiable) {
		t.Fatalf("WaitN(6) with a capacity of 5: %v, want ErrUnsatisfiable", err)
	}
}

var errGaveUp = errors.New("gave up")

// waitClock is a [sluice.WaitClock] of two functions.
type waitClock struct {
	now   func() time.Time
	timer func(d time.Duration) (<-chan time.Time, func() bool)
}

func (c waitClock) Now() time.Time { return c.now() }

func (c waitClock) Timer(d time.Duration) (<-chan time.Time, func() bool) { return c.timer(d) }
