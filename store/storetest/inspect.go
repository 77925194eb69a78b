package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// testInspect: reading a bucket is a peek ([sluice.Hit.Peek]), the
// inspect half of the stores' operator controls (a [sluice.Resetter] is
// the other). In every algorithm, a peek on a bucket never used reports
// it full; a peek reports exactly what a take of its cost would be
// answered (allowed or not, remaining, retry-after, reset-after) and
// consumes nothing; a forced charge into debt shows as a longer wait; and
// after a reset a peek finds the bucket as if never used.
func testInspect(t *testing.T, newHarness Factory) {
	for _, a := range algorithms {
		t.Run(a.alg.String(), func(t *testing.T) {
			h := newHarness(t)
			h.SetTime(windowStart(time.Second))
			hit := sluice.Hit{Key: uniqueKey(t, "inspect"), Limit: a.limit, Algorithm: a.alg, Cost: 1}
			fresh := peekCost(t, h.Store, hit, 1)
			want := sluice.Result{Allowed: true, Limit: a.limit, Remaining: a.limit.Capacity()}
			if fresh != want {
				t.Fatalf("peek at a bucket never used: %+v, want %+v", fresh, want)
			}
			for _, cost := range []int64{2, 2, 1} {
				c := hit
				c.Cost = cost
				before := peekCost(t, h.Store, hit, cost)
				taken := take1(t, h.Store, c)
				if before.Allowed != taken.Allowed || before.Remaining-cost != taken.Remaining {
					t.Fatalf("peek of %d: %+v; the take that followed: %+v", cost, before, taken)
				}
			}
			// Empty now: a peek and a refused take see the same bucket.
			peeked := peekCost(t, h.Store, hit, 2)
			refused := take1(t, h.Store, sluice.Hit{Key: hit.Key, Limit: a.limit, Algorithm: a.alg, Cost: 2})
			refused.Receipt = sluice.Receipt{}
			if peeked.Allowed || peeked.RetryAfter <= 0 || peeked.ResetAfter < peeked.RetryAfter || peeked != refused {
				t.Fatalf("peek at an empty bucket: %+v; a refused take: %+v; want equal, refused, with a retry-after no later than the reset", peeked, refused)
			}
			// A forced charge puts the bucket into debt: the wait grows.
			forced := hit
			forced.Force, forced.Cost = true, 3
			take1(t, h.Store, forced)
			if debt := peekCost(t, h.Store, hit, 1); debt.Allowed || debt.RetryAfter < peeked.RetryAfter {
				t.Fatalf("peek after a forced charge into debt: %+v, want refused for at least %v", debt, peeked.RetryAfter)
			}
			rs, ok := h.Store.(sluice.Resetter)
			if !ok {
				t.Skipf("%T does not implement sluice.Resetter", h.Store)
			}
			if err := rs.Reset(context.Background(), []sluice.Hit{hit}); err != nil {
				t.Fatal(err)
			}
			if got := peekCost(t, h.Store, hit, 1); got != fresh {
				t.Fatalf("peek after a reset: %+v, want the never-used %+v", got, fresh)
			}
			if err := rs.Reset(context.Background(), []sluice.Hit{hit}); err != nil {
				t.Fatalf("a second reset of a full bucket: %v", err)
			}
		})
	}
}
