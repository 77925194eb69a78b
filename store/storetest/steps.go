package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// step is one call in a table case: move the clock by advance, then take
// cost from the case's bucket (or peek at it) and compare the result.
type step struct {
	advance       time.Duration
	cost          int64
	peek          bool
	allowed       bool
	remaining     int64
	retryAfter    time.Duration
	resetAfter    time.Duration
	unsatisfiable bool
}

type stepCase struct {
	name  string
	alg   sluice.Algorithm
	limit sluice.Limit
	steps []step
}

const sec = time.Second

const ms = time.Millisecond

var stepCases = []stepCase{
	{
		name:  "token bucket 10/s burst 3",
		limit: sluice.PerSecond(10).WithBurst(3),
		steps: []step{
			{cost: 1, allowed: true, remaining: 2, resetAfter: 100 * ms},
			{cost: 1, allowed: true, remaining: 1, resetAfter: 200 * ms},
			{cost: 1, allowed: true, remaining: 0, resetAfter: 300 * ms},
			{cost: 1, remaining: 0, retryAfter: 100 * ms, resetAfter: 300 * ms},
			{advance: 50 * ms, cost: 1, remaining: 0, retryAfter: 50 * ms, resetAfter: 250 * ms},
			{advance: 50 * ms, cost: 1, allowed: true, remaining: 0, resetAfter: 300 * ms},
			{advance: time.Second, cost: 2, allowed: true, remaining: 1, resetAfter: 200 * ms},
			{cost: 3, remaining: 1, retryAfter: 200 * ms, resetAfter: 200 * ms},
			{cost: 4, remaining: 1, resetAfter: 200 * ms, unsatisfiable: true},
			{cost: 1, peek: true, allowed: true, remaining: 1, resetAfter: 200 * ms},
			{advance: 150 * ms, cost: 1, peek: true, allowed: true, remaining: 2, resetAfter: 50 * ms},
		},
	},
	{
		name:  "token bucket 100/min",
		limit: sluice.PerMinute(100),
		steps: append(repeatStep(99, func(i int) step {
			return step{cost: 1, allowed: true, remaining: int64(99 - i), resetAfter: time.Duration(i+1) * 600 * ms}
		}),
			step{cost: 1, allowed: true, remaining: 0, resetAfter: time.Minute},
			step{cost: 1, remaining: 0, retryAfter: 600 * ms, resetAfter: time.Minute},
			step{advance: 599 * ms, cost: 1, remaining: 0, retryAfter: ms, resetAfter: time.Minute - 599*ms},
			step{advance: ms, cost: 1, allowed: true, remaining: 0, resetAfter: time.Minute},
		),
	},
	{
		name:  "token bucket with an interval of a fraction of a microsecond rounded up",
		limit: sluice.PerSecond(3), // 333333.3 µs, enforced as 333334 µs
		steps: []step{
			{cost: 3, allowed: true, remaining: 0, resetAfter: 1000002 * time.Microsecond},
			{cost: 1, remaining: 0, retryAfter: 333334 * time.Microsecond, resetAfter: 1000002 * time.Microsecond},
			{advance: 333333 * time.Microsecond, cost: 1, remaining: 0, retryAfter: time.Microsecond, resetAfter: 666669 * time.Microsecond},
			{advance: time.Microsecond, cost: 1, allowed: true, remaining: 0, resetAfter: 1000002 * time.Microsecond},
		},
	},
	{
		name:  "token bucket cost larger than one",
		limit: sluice.PerSecond(1).WithBurst(10),
		steps: []step{
			{cost: 7, allowed: true, remaining: 3, resetAfter: 7 * time.Second},
			{cost: 5, remaining: 3, retryAfter: 2 * time.Second, resetAfter: 7 * time.Second},
			{advance: 2 * time.Second, cost: 5, allowed: true, remaining: 0, resetAfter: 10 * time.Second},
			{advance: time.Hour, cost: 10, allowed: true, remaining: 0, resetAfter: 10 * time.Second},
			{cost: 11, remaining: 0, resetAfter: 10 * time.Second, unsatisfiable: true},
		},
	},
}

var windowCases = []stepCase{
	{
		name:  "fixed window 3/s",
		alg:   sluice.FixedWindow,
		limit: sluice.PerSecond(3),
		steps: []step{
			{cost: 1, allowed: true, remaining: 2, resetAfter: sec},
			{cost: 1, allowed: true, remaining: 1, resetAfter: sec},
			{advance: 100 * ms, cost: 1, allowed: true, remaining: 0, resetAfter: 900 * ms},
			{cost: 1, remaining: 0, retryAfter: 900 * ms, resetAfter: 900 * ms},
			{cost: 4, remaining: 0, resetAfter: 900 * ms, unsatisfiable: true},
			{advance: 900 * ms, cost: 3, allowed: true, remaining: 0, resetAfter: sec},
			{advance: 999 * ms, cost: 1, remaining: 0, retryAfter: ms, resetAfter: ms},
			{advance: ms, cost: 1, peek: true, allowed: true, remaining: 3},
		},
	},
	{
		name:  "sliding window counter 4/s",
		alg:   sluice.SlidingWindow,
		limit: sluice.PerSecond(4),
		steps: []step{
			{cost: 2, allowed: true, remaining: 2, resetAfter: 2 * sec},
			{cost: 2, allowed: true, remaining: 0, resetAfter: 2 * sec},
			// Next window: the 4 weigh 3 after 250 ms; 1 more fits at 1.25 s.
			{cost: 1, remaining: 0, retryAfter: 1250 * ms, resetAfter: 2 * sec},
			{advance: 1250 * ms, cost: 1, allowed: true, remaining: 0, resetAfter: 1750 * ms},
			{cost: 1, remaining: 0, retryAfter: 250 * ms, resetAfter: 1750 * ms},
			{advance: 250 * ms, cost: 1, allowed: true, remaining: 0, resetAfter: 1500 * ms},
			{advance: 2 * sec, cost: 1, peek: true, allowed: true, remaining: 4},
		},
	},
	{
		name:  "sliding log 3/s",
		alg:   sluice.SlidingLog,
		limit: sluice.PerSecond(3),
		steps: []step{
			{cost: 1, allowed: true, remaining: 2, resetAfter: sec},
			{advance: 200 * ms, cost: 1, allowed: true, remaining: 1, resetAfter: sec},
			{advance: 200 * ms, cost: 1, allowed: true, remaining: 0, resetAfter: sec},
			{advance: 100 * ms, cost: 1, remaining: 0, retryAfter: 500 * ms, resetAfter: 900 * ms},
			{cost: 2, remaining: 0, retryAfter: 700 * ms, resetAfter: 900 * ms},
			{cost: 4, remaining: 0, resetAfter: 900 * ms, unsatisfiable: true},
			{advance: 500 * ms, cost: 1, allowed: true, remaining: 0, resetAfter: sec},
			{advance: sec, cost: 1, peek: true, allowed: true, remaining: 3},
		},
	},
}

func repeatStep(n int, f func(i int) step) []step {
	s := make([]step, n)
	for i := range s {
		s[i] = f(i)
	}
	return s
}

func testSteps(t *testing.T, newHarness Factory) {
	for _, tc := range append(stepCases, windowCases...) {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			now := windowStart(tc.limit.Period)
			h.SetTime(now)
			key := uniqueKey(t, "steps")
			for i, st := range tc.steps {
				now = now.Add(st.advance)
				h.SetTime(now)
				got := take1(t, h.Store, sluice.Hit{Key: key, Limit: tc.limit, Algorithm: tc.alg, Cost: st.cost, Peek: st.peek})
				want := sluice.Result{
					Allowed: st.allowed, Limit: tc.limit, Remaining: st.remaining,
					RetryAfter: st.retryAfter, ResetAfter: st.resetAfter, Unsatisfiable: st.unsatisfiable,
				}
				got.Receipt = sluice.Receipt{} // see testRefund
				if got.Remembered && got.Allowed {
					t.Fatalf("step %d: a hit answered from memory passed: %+v", i, got)
				}
				// A store may answer a refusal from its memory of an earlier
				// one (see sluice.Result.Remembered): it must be the answer
				// the store would give.
				got.Remembered = false
				if got != want {
					t.Fatalf("step %d (advance %v, cost %d):\n got %+v\nwant %+v", i, st.advance, st.cost, got, want)
				}
			}
		})
	}
}

// start is the time every case begins at: now, in whole seconds, so a
// real Redis's key expiry (which runs on real time) agrees with the case.
func start() time.Time { return time.Now().Truncate(time.Second) }

// windowStart is the start of the current window of length period:
// windows are aligned to the Unix epoch, and time.Truncate aligns to the
// zero time, which is a whole number of days before it.
func windowStart(period time.Duration) time.Time { return time.Now().Truncate(period) }

func take1(t *testing.T, s sluice.Store, h sluice.Hit) sluice.Result {
	t.Helper()
	var out [1]sluice.Result
	if err := s.Take(context.Background(), []sluice.Hit{h}, out[:]); err != nil {
		t.Fatalf("Take(%q): %v", h.Key, err)
	}
	return out[0]
}

func take(t *testing.T, s sluice.Store, hits ...sluice.Hit) []sluice.Result {
	t.Helper()
	out := make([]sluice.Result, len(hits))
	if err := s.Take(context.Background(), hits, out); err != nil {
		t.Fatalf("Take: %v", err)
	}
	return out
}

// remaining peeks at a bucket without consuming.
func remaining(t *testing.T, s sluice.Store, key string, l sluice.Limit) int64 {
	t.Helper()
	return take1(t, s, sluice.Hit{Key: key, Limit: l, Peek: true}).Remaining
}
