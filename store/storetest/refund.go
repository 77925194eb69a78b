package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// refundLimits are the limits the refund tests run each algorithm with.
var refundLimits = []struct {
	alg   sluice.Algorithm
	limit sluice.Limit
}{
	{sluice.TokenBucket, sluice.PerSecond(5)},
	{sluice.TokenBucket, sluice.PerSecond(2).WithBurst(6)},
	{sluice.SlidingWindow, sluice.PerSecond(5)},
	{sluice.FixedWindow, sluice.PerSecond(5)},
	{sluice.SlidingLog, sluice.PerSecond(5)},
}

// testRefundExact: a take given back at once leaves the bucket exactly as
// a twin bucket that took only what was kept. Two buckets go through the
// same random takes; now and then the first takes more and gives the extra
// back, whole or in part, and the twin takes what the first kept. Their
// peeks must agree after every step.
func testRefundExact(t *testing.T, newHarness Factory) {
	for _, rl := range refundLimits {
		t.Run(rl.alg.String()+"/"+rl.limit.String(), func(t *testing.T) {
			h := newHarness(t)
			rf := refunder(t, h)
			rng := rand.New(rand.NewPCG(uint64(rl.limit.Capacity()), uint64(rl.alg)))
			now := windowStart(time.Second)
			h.SetTime(now)
			a := sluice.Hit{Key: uniqueKey(t, "a"), Limit: rl.limit, Algorithm: rl.alg}
			b := a
			b.Key = uniqueKey(t, "b")
			capacity := rl.limit.Capacity()
			for i := range 60 {
				now = now.Add(time.Duration(rng.IntN(300)) * time.Millisecond)
				h.SetTime(now)
				cost := 1 + rng.Int64N(3)
				if rng.IntN(2) == 0 {
					a.Cost, b.Cost = cost, cost
					ra, rb := take1(t, h.Store, a), take1(t, h.Store, b)
					if ra.Allowed != rb.Allowed {
						if h.leaseExplains(ra, rb, cost) {
							// The twins' leases hold different tokens: from
							// here on they differ by more than a lease.
							t.Logf("step %d: twins decided a take of %d differently, within a lease: %+v and %+v", i, cost, ra, rb)
							return
						}
						t.Fatalf("step %d: twins decided a take of %d differently: %+v and %+v", i, cost, ra, rb)
					}
				} else {
					a.Cost = cost
					ra := take1(t, h.Store, a)
					if ra.Allowed {
						if ra.Receipt.Taken != cost {
							t.Fatalf("step %d: receipt %+v for a take of %d", i, ra.Receipt, cost)
						}
						units := rng.Int64N(cost + 1) // 0: all of it
						refund(t, rf, sluice.Refund{Hit: a, Receipt: ra.Receipt, Units: units})
						if kept := cost - (sluice.Refund{Receipt: ra.Receipt, Units: units}).Amount(); kept > 0 {
							b.Cost = kept
							if rb := take1(t, h.Store, b); !rb.Allowed {
								t.Fatalf("step %d: the twin could not take the %d kept: %+v", i, kept, rb)
							}
						}
					}
				}
				for c := int64(1); c <= capacity; c++ {
					pa, pb := peekCost(t, h.Store, a, c), peekCost(t, h.Store, b, c)
					if !h.sameAnswer(a.Limit, pa, pb) {
						t.Fatalf("step %d, peek of %d: bucket %+v, twin %+v", i, c, pa, pb)
					}
				}
			}
		})
	}
}

// testRefundAfterRefill: a refund never gives back what has come back on
// its own. A take, time passing, a second take, then a refund of the first
// leaves the bucket as a twin that made only the second take.
func testRefundAfterRefill(t *testing.T, newHarness Factory) {
	for _, tc := range []struct {
		alg   sluice.Algorithm
		limit sluice.Limit
		first int64
		wait  time.Duration
	}{
		{sluice.TokenBucket, sluice.PerSecond(5), 4, 400 * time.Millisecond}, // 2 of 4 back
		{sluice.TokenBucket, sluice.PerSecond(5), 2, 400 * time.Millisecond}, // just all back
		{sluice.TokenBucket, sluice.PerSecond(5), 4, 3 * time.Second},        // long all back
		{sluice.FixedWindow, sluice.PerSecond(5), 4, time.Second},            // the next window
		{sluice.SlidingWindow, sluice.PerSecond(5), 2, time.Second},          // the take is in prev
		{sluice.SlidingWindow, sluice.PerSecond(5), 4, 2 * time.Second},      // the take is gone
		{sluice.SlidingLog, sluice.PerSecond(5), 2, 600 * time.Millisecond},  // still in the log
		{sluice.SlidingLog, sluice.PerSecond(5), 4, time.Second},             // out of the window
	} {
		t.Run(fmt.Sprintf("%v/%d/%v", tc.alg, tc.first, tc.wait), func(t *testing.T) {
			h := newHarness(t)
			rf := refunder(t, h)
			now := windowStart(time.Second)
			h.SetTime(now)
			a := sluice.Hit{Key: uniqueKey(t, "a"), Limit: tc.limit, Algorithm: tc.alg, Cost: tc.first}
			b := a
			b.Key = uniqueKey(t, "b")
			first := take1(t, h.Store, a)
			h.SetTime(now.Add(tc.wait))
			a.Cost, b.Cost = 2, 2
			if ra, rb := take1(t, h.Store, a), take1(t, h.Store, b); !ra.Allowed || !rb.Allowed {
				t.Fatalf("the second takes: %+v and %+v, want both allowed", ra, rb)
			}
			a.Cost = tc.first
			refund(t, rf, sluice.Refund{Hit: a, Receipt: first.Receipt})
			for c := int64(1); c <= 5; c++ {
				pa, pb := peekCost(t, h.Store, a, c), peekCost(t, h.Store, b, c)
				if !h.sameAnswer(a.Limit, pa, pb) {
					t.Fatalf("peek of %d after the refund: bucket %+v, twin that never took %+v", c, pa, pb)
				}
			}
		})
	}
}

// testRefundInvalid: refunds the contract refuses give nothing back.
func testRefundInvalid(t *testing.T, newHarness Factory) {
	h := newHarness(t)
	rf := refunder(t, h)
	h.SetTime(start())
	hit := sluice.Hit{Key: uniqueKey(t, "invalid"), Limit: sluice.PerSecond(5), Cost: 3}
	rc := take1(t, h.Store, hit).Receipt
	peek := hit
	peek.Peek = true
	for _, tc := range []struct {
		name string
		r    sluice.Refund
	}{
		{"more than taken", sluice.Refund{Hit: hit, Receipt: rc, Units: 4}},
		{"negative", sluice.Refund{Hit: hit, Receipt: rc, Units: -1}},
		{"nothing taken", sluice.Refund{Hit: hit}},
		{"a peek", sluice.Refund{Hit: peek, Receipt: rc}},
		{"an invalid hit", sluice.Refund{Hit: sluice.Hit{Limit: hit.Limit}, Receipt: rc}},
	} {
		if err := rf.Refund(context.Background(), []sluice.Refund{tc.r}); !errors.Is(err, sluice.ErrInvalidHit) {
			t.Errorf("%s: %v, want ErrInvalidHit", tc.name, err)
		}
	}
	if got := remaining(t, h.Store, hit.Key, hit.Limit); got != 2 {
		t.Fatalf("after the refused refunds: %d remaining, want 2", got)
	}
	// Two partial refunds never give back more than the take in all.
	refund(t, rf, sluice.Refund{Hit: hit, Receipt: rc, Units: 2}, sluice.Refund{Hit: hit, Receipt: rc, Units: 2})
	if got := remaining(t, h.Store, hit.Key, hit.Limit); got != 5 {
		t.Fatalf("after refunds of 2 and 2 from a take of 3: %d remaining, want 5", got)
	}
	other := sluice.Hit{Key: uniqueKey(t, "other"), Limit: sluice.PerSecond(5), Cost: 5}
	take1(t, h.Store, other)
	if got := remaining(t, h.Store, hit.Key, hit.Limit); got != 5 {
		t.Fatalf("a bucket refunded beyond its take: %d remaining, want 5", got)
	}
}

// testRefundRepeated: a receipt refunded again and again never leaves its
// bucket fuller than full. After three takes and ten refunds of the last
// one's receipt, the takes that follow admit at most the capacity.
func testRefundRepeated(t *testing.T, newHarness Factory) {
	for _, a := range algorithms {
		t.Run(a.alg.String(), func(t *testing.T) {
			h := newHarness(t)
			rf := refunder(t, h)
			h.SetTime(windowStart(time.Second))
			hit := sluice.Hit{Key: uniqueKey(t, "repeated"), Limit: a.limit, Algorithm: a.alg}
			var last sluice.Result
			for range 3 {
				if last = take1(t, h.Store, hit); !last.Allowed {
					t.Fatalf("a take under the limit refused: %+v", last)
				}
			}
			for range 10 {
				refund(t, rf, sluice.Refund{Hit: hit, Receipt: last.Receipt})
			}
			capacity := a.limit.Capacity()
			admitted := int64(0)
			for range 3 * capacity {
				if take1(t, h.Store, hit).Allowed {
					admitted++
				}
			}
			if admitted > capacity {
				t.Fatalf("after ten refunds of one take of 1: %d admitted, want at most the capacity, %d", admitted, capacity)
			}
		})
	}
}

// testReset: a reset bucket is full again, in every algorithm; other
// buckets keep their state.
func testReset(t *testing.T, newHarness Factory) {
	for _, a := range algorithms {
		t.Run(a.alg.String(), func(t *testing.T) {
			h := newHarness(t)
			rs, ok := h.Store.(sluice.Resetter)
			if !ok {
				t.Skipf("%T does not implement sluice.Resetter", h.Store)
			}
			h.SetTime(windowStart(time.Second))
			hit := sluice.Hit{Key: uniqueKey(t, "reset"), Limit: a.limit, Algorithm: a.alg, Cost: 5}
			other := hit
			other.Key = uniqueKey(t, "other")
			take(t, h.Store, hit, other)
			if r := take1(t, h.Store, hit); r.Allowed {
				t.Fatalf("an exhausted bucket passed: %+v", r)
			}
			never := sluice.Hit{Key: uniqueKey(t, "never"), Limit: a.limit, Algorithm: a.alg}
			if err := rs.Reset(context.Background(), []sluice.Hit{hit, never}); err != nil {
				t.Fatal(err)
			}
			if got := peekAlg(t, h.Store, hit); got != 5 {
				t.Fatalf("after a reset: %d remaining, want 5", got)
			}
			if got := peekAlg(t, h.Store, other); got != 0 {
				t.Fatalf("a reset changed another bucket: %d remaining, want 0", got)
			}
			if r := take1(t, h.Store, hit); !r.Allowed || r.Remaining != 0 {
				t.Fatalf("a take of 5 after the reset: %+v, want allowed with 0 remaining", r)
			}
			if err := rs.Reset(context.Background(), []sluice.Hit{{Limit: a.limit}}); !errors.Is(err, sluice.ErrInvalidHit) {
				t.Fatalf("reset of a hit without a key: %v, want ErrInvalidHit", err)
			}
		})
	}
}

// refunder returns h's store as a Refunder, or skips t when it is not one.
func refunder(t *testing.T, h Harness) sluice.Refunder {
	t.Helper()
	rf, ok := h.Store.(sluice.Refunder)
	if !ok {
		t.Skipf("%T does not implement sluice.Refunder", h.Store)
	}
	return rf
}

func refund(t *testing.T, rf sluice.Refunder, refunds ...sluice.Refund) {
	t.Helper()
	if err := rf.Refund(context.Background(), refunds); err != nil {
		t.Fatalf("Refund: %v", err)
	}
}

// peekCost peeks at h's bucket with cost c.
func peekCost(t *testing.T, s sluice.Store, h sluice.Hit, c int64) sluice.Result {
	t.Helper()
	h.Cost, h.Peek, h.MinCost, h.Shadow, h.Force = c, true, 0, false, false
	return take1(t, s, h)
}

// sameAnswer reports whether two peeks agree, receipts aside: exactly, or
// within what a lease of h.Lease tokens can hold (see [Harness.Lease]).
func (h Harness) sameAnswer(l sluice.Limit, a, b sluice.Result) bool {
	a.Receipt, b.Receipt = sluice.Receipt{}, sluice.Receipt{}
	if h.Lease <= 0 || a == b {
		return a == b
	}
	slack := time.Duration(h.Lease*l.IntervalMicros()) * time.Microsecond
	within := func(x, y, d int64) bool { return x-y <= d && y-x <= d }
	return a.Limit == b.Limit && a.Unsatisfiable == b.Unsatisfiable &&
		within(a.Remaining, b.Remaining, h.Lease) &&
		within(int64(a.ResetAfter), int64(b.ResetAfter), int64(slack)) &&
		within(int64(a.RetryAfter), int64(b.RetryAfter), int64(slack)) &&
		(a.Allowed == b.Allowed || !within(a.Remaining, b.Remaining, 0))
}

// leaseExplains reports whether a store of leases (see [Harness.Lease])
// may decide a take of cost differently in two buckets whose exact state
// is the same: the one refused holds within a lease of the cost.
func (h Harness) leaseExplains(a, b sluice.Result, cost int64) bool {
	refused := a
	if a.Allowed {
		refused = b
	}
	return h.Lease > 0 && !refused.Unsatisfiable && refused.Remaining+h.Lease >= cost
}
