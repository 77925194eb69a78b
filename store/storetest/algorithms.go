package storetest

import (
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// algorithms lists every algorithm with a limit of 5 per second it
// accepts.
var algorithms = []struct {
	alg   sluice.Algorithm
	limit sluice.Limit
}{
	{sluice.TokenBucket, sluice.PerSecond(5)},
	{sluice.SlidingWindow, sluice.PerSecond(5)},
	{sluice.FixedWindow, sluice.PerSecond(5)},
	{sluice.SlidingLog, sluice.PerSecond(5)},
}

// testMixedAlgorithms: one request over all four algorithms and a rule
// that denies consumes nothing in any of them; admitted, it consumes in
// every one.
func testMixedAlgorithms(t *testing.T, newHarness Factory) {
	h := newHarness(t)
	h.SetTime(windowStart(time.Second))
	var hits []sluice.Hit
	for _, a := range algorithms {
		hits = append(hits, sluice.Hit{Key: uniqueKey(t, a.alg.String()), Limit: a.limit, Algorithm: a.alg, Cost: 2})
	}
	res := take(t, h.Store, hits...)
	for i, r := range res {
		if !r.Allowed || r.Remaining != 3 {
			t.Fatalf("%v: first request %+v, want allowed with 3 remaining", hits[i].Algorithm, r)
		}
	}
	deny := sluice.Hit{Key: uniqueKey(t, "deny"), Limit: sluice.PerHour(1), Algorithm: sluice.FixedWindow, Cost: 2}
	res = take(t, h.Store, append(hits, deny)...)
	if sluice.Admitted(append(hits, deny), res) {
		t.Fatalf("admitted although a rule denies: %+v", res)
	}
	for i, hit := range hits {
		if got := peekAlg(t, h.Store, hit); got != 3 {
			t.Fatalf("%v: remaining %d after a refused request, want 3", hit.Algorithm, got)
		}
		if !res[i].Allowed || res[i].Remaining != 3 {
			t.Fatalf("%v: in the refused request %+v, want passing with 3 remaining", hit.Algorithm, res[i])
		}
	}
}

// testShadowEveryAlgorithm: a shadow hit that would deny never blocks, and
// consumes only when it passes, whatever its algorithm.
func testShadowEveryAlgorithm(t *testing.T, newHarness Factory) {
	for _, a := range algorithms {
		t.Run(a.alg.String(), func(t *testing.T) {
			h := newHarness(t)
			h.SetTime(windowStart(time.Second))
			shadow := sluice.Hit{Key: uniqueKey(t, "shadow"), Limit: a.limit, Algorithm: a.alg, Cost: 3, Shadow: true}
			enforce := sluice.Hit{Key: uniqueKey(t, "enforce"), Limit: sluice.PerHour(100), Cost: 1}
			first := take(t, h.Store, shadow, enforce)
			second := take(t, h.Store, shadow, enforce)
			if !first[0].Allowed || second[0].Allowed || !sluice.Admitted([]sluice.Hit{shadow, enforce}, second) {
				t.Fatalf("first %+v, second %+v: want the shadow hit to pass, then deny without blocking", first, second)
			}
			if got := peekAlg(t, h.Store, shadow); got != 2 {
				t.Fatalf("shadow bucket: remaining %d, want 2 (it consumed only when it passed)", got)
			}
			if got := peekAlg(t, h.Store, enforce); got != 98 {
				t.Fatalf("enforcing bucket: remaining %d, want 98", got)
			}
		})
	}
}

// testForcedCharges: a forced hit consumes even over the limit and blocks
// nothing; the debt is bounded.
func testForcedCharges(t *testing.T, newHarness Factory) {
	for _, a := range algorithms {
		t.Run(a.alg.String(), func(t *testing.T) {
			h := newHarness(t)
			h.SetTime(windowStart(time.Second))
			hit := sluice.Hit{Key: uniqueKey(t, "charge"), Limit: a.limit, Algorithm: a.alg, Cost: 4}
			if res := take1(t, h.Store, hit); !res.Allowed || res.Remaining != 1 {
				t.Fatalf("first: %+v", res)
			}
			charge := hit
			charge.Force, charge.Cost = true, 3
			res := take1(t, h.Store, charge)
			if res.Allowed || res.Remaining != 0 {
				t.Fatalf("forced charge over the limit: %+v, want reported as not passing, 0 remaining", res)
			}
			one := hit
			one.Cost = 1
			if res := take1(t, h.Store, one); res.Allowed || res.RetryAfter <= 0 {
				t.Fatalf("after a charge into debt: %+v, want denied with a retry-after", res)
			}
			// A huge charge owes at most twice the capacity.
			charge.Cost = 1 << 40
			take1(t, h.Store, charge)
			res = take1(t, h.Store, one)
			if res.Allowed || res.RetryAfter > 3*time.Second {
				t.Fatalf("after a huge charge: %+v, want retry-after within 3 periods", res)
			}
			mixed := []sluice.Hit{hit, charge}
			if err := h.Store.Take(t.Context(), mixed, make([]sluice.Result, 2)); err == nil {
				t.Fatal("forced and unforced hits mixed in one call were accepted")
			}
		})
	}
}

// testBoundaryBurst shows the documented trade-offs: a fixed window admits
// twice its limit across a window boundary; a sliding log never does, and a
// sliding window counter does not for this burst.
func testBoundaryBurst(t *testing.T, newHarness Factory) {
	want := map[sluice.Algorithm]int{sluice.FixedWindow: 20, sluice.SlidingLog: 10, sluice.SlidingWindow: 10}
	for alg, wantAdmitted := range want {
		t.Run(alg.String(), func(t *testing.T) {
			h := newHarness(t)
			boundary := windowStart(time.Second).Add(time.Second)
			hit := sluice.Hit{Key: uniqueKey(t, "edge"), Limit: sluice.PerSecond(10), Algorithm: alg, Cost: 1}
			admitted := 0
			for _, at := range []time.Time{boundary.Add(-time.Millisecond), boundary.Add(time.Millisecond)} {
				h.SetTime(at)
				for range 10 {
					if take1(t, h.Store, hit).Allowed {
						admitted++
					}
				}
			}
			if admitted != wantAdmitted {
				t.Fatalf("admitted %d within 2 ms around a window boundary, want %d", admitted, wantAdmitted)
			}
		})
	}
}

func peekAlg(t *testing.T, s sluice.Store, h sluice.Hit) int64 {
	t.Helper()
	h.Peek, h.Shadow, h.Force, h.MinCost = true, false, false, 0
	return take1(t, s, h).Remaining
}

// testHugeForcedCharge: a forced charge of the largest cost owes at most
// twice the limit, in every algorithm; nothing overflows.
func testHugeForcedCharge(t *testing.T, newHarness Factory) {
	for _, a := range algorithms {
		t.Run(a.alg.String(), func(t *testing.T) {
			h := newHarness(t)
			h.SetTime(windowStart(time.Second))
			hit := sluice.Hit{Key: uniqueKey(t, "huge"), Limit: a.limit, Algorithm: a.alg, Cost: 1}
			take1(t, h.Store, hit)
			charge := hit
			charge.Force, charge.Cost = true, math.MaxInt64
			take1(t, h.Store, charge)
			if res := take1(t, h.Store, hit); res.Allowed || res.RetryAfter <= 0 {
				t.Fatalf("after a charge of MaxInt64: %+v, want denied", res)
			}
		})
	}
}
