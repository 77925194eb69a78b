package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// testZeroCostIsOne: a hit whose Cost is left at zero costs 1, in every
// algorithm: a limit of 1 per hour lets one through, then refuses.
func testZeroCostIsOne(t *testing.T, newHarness Factory) {
	for _, a := range algorithms {
		t.Run(a.alg.String(), func(t *testing.T) {
			h := newHarness(t)
			h.SetTime(windowStart(time.Hour))
			hit := sluice.Hit{Key: uniqueKey(t, "zero"), Limit: sluice.PerHour(1), Algorithm: a.alg}
			if r := take1(t, h.Store, hit); !r.Allowed || r.Remaining != 0 {
				t.Fatalf("first hit without a cost: %+v, want allowed with 0 remaining", r)
			}
			for i := range 4 {
				if r := take1(t, h.Store, hit); r.Allowed {
					t.Fatalf("hit %d without a cost passed a limit of 1 per hour: %+v", i+2, r)
				}
			}
		})
	}
}

// testPeek: a peek reports what a hit of its cost would find, consumes
// nothing, and never blocks the request it belongs to.
func testPeek(t *testing.T, newHarness Factory) {
	for _, a := range algorithms {
		t.Run(a.alg.String(), func(t *testing.T) {
			h := newHarness(t)
			h.SetTime(windowStart(time.Second))
			hit := sluice.Hit{Key: uniqueKey(t, "peek"), Limit: a.limit, Algorithm: a.alg, Cost: 4}
			take1(t, h.Store, hit) // 1 of 5 left
			peek := hit
			peek.Cost, peek.Peek = 2, true
			for range 3 {
				r := take1(t, h.Store, peek)
				if r.Allowed || r.Remaining != 1 || r.RetryAfter <= 0 || r.Receipt != (sluice.Receipt{}) {
					t.Fatalf("peek of 2 with 1 left: %+v, want refused with 1 remaining, a retry-after and no receipt", r)
				}
			}
			peek.Cost = 1
			if r := take1(t, h.Store, peek); !r.Allowed || r.Remaining != 1 {
				t.Fatalf("peek of 1 with 1 left: %+v, want allowed with 1 remaining", r)
			}
			// In a request, a peek that would not pass blocks nothing.
			other := sluice.Hit{Key: uniqueKey(t, "other"), Limit: a.limit, Algorithm: a.alg, Cost: 1}
			peek.Cost = 5
			hits := []sluice.Hit{peek, other}
			res := take(t, h.Store, hits...)
			if !sluice.Admitted(hits, res) || res[0].Allowed || res[1].Remaining != 4 {
				t.Fatalf("a request with a peek that would not pass: %+v, want admitted, the other hit consuming", res)
			}
			if got := peekAlg(t, h.Store, hit); got != 1 {
				t.Fatalf("after the peeks: %d remaining, want 1", got)
			}
		})
	}
}

// testPartial: a partial hit takes what is there, up to its cost, if that
// is at least its minimum; otherwise it is refused and takes nothing.
func testPartial(t *testing.T, newHarness Factory) {
	for _, a := range algorithms {
		t.Run(a.alg.String(), func(t *testing.T) {
			h := newHarness(t)
			_, receipts := h.Store.(sluice.Refunder)
			h.SetTime(windowStart(time.Second))
			key := uniqueKey(t, "partial")
			up := func(cost, min int64) sluice.Result {
				return take1(t, h.Store, sluice.Hit{Key: key, Limit: a.limit, Algorithm: a.alg, Cost: cost, MinCost: min})
			}
			steps := []struct {
				cost, min      int64
				allowed        bool
				taken, remains int64
			}{
				{cost: 3, min: 1, allowed: true, taken: 3, remains: 2},
				{cost: 4, min: 1, allowed: true, taken: 2, remains: 0},
				{cost: 4, min: 1, allowed: false, taken: 0, remains: 0},
				{cost: 1, min: 1, allowed: false, taken: 0, remains: 0},
			}
			for i, st := range steps {
				r := up(st.cost, st.min)
				if r.Allowed != st.allowed || r.Remaining != st.remains {
					t.Fatalf("step %d (up to %d, at least %d): %+v, want allowed=%v remaining=%d", i, st.cost, st.min, r, st.allowed, st.remains)
				}
				if receipts && r.Receipt.Taken != st.taken {
					t.Fatalf("step %d: took %d, want %d", i, r.Receipt.Taken, st.taken)
				}
				if !r.Allowed && r.RetryAfter <= 0 {
					t.Fatalf("step %d: refused with no retry-after: %+v", i, r)
				}
			}
			// A partial hit needing more than is left is refused whole.
			h.SetTime(windowStart(time.Second).Add(3 * time.Second))
			fresh := uniqueKey(t, "partial-min")
			take1(t, h.Store, sluice.Hit{Key: fresh, Limit: a.limit, Algorithm: a.alg, Cost: 3})
			r := take1(t, h.Store, sluice.Hit{Key: fresh, Limit: a.limit, Algorithm: a.alg, Cost: 5, MinCost: 3})
			if r.Allowed || r.Remaining != 2 {
				t.Fatalf("up to 5, at least 3, with 2 left: %+v, want refused with 2 remaining", r)
			}
			if got := peekAlg(t, h.Store, sluice.Hit{Key: fresh, Limit: a.limit, Algorithm: a.alg}); got != 2 {
				t.Fatalf("a refused partial hit consumed: %d remaining, want 2", got)
			}
		})
	}
}

// testPartialInRequest: partial hits take part in a request's admission
// like any other: refused elsewhere, they take nothing.
func testPartialInRequest(t *testing.T, newHarness Factory) {
	h := newHarness(t)
	h.SetTime(windowStart(time.Second))
	partial := sluice.Hit{Key: uniqueKey(t, "partial"), Limit: sluice.PerSecond(10), Cost: 8, MinCost: 1}
	deny := sluice.Hit{Key: uniqueKey(t, "deny"), Limit: sluice.PerHour(1), Cost: 1}
	take1(t, h.Store, deny)
	hits := []sluice.Hit{partial, deny}
	res := take(t, h.Store, hits...)
	if sluice.Admitted(hits, res) || !res[0].Allowed || res[0].Receipt != (sluice.Receipt{}) {
		t.Fatalf("partial hit in a refused request: %+v, want refused, the partial hit passing with no receipt", res)
	}
	if got := peekAlg(t, h.Store, partial); got != 10 {
		t.Fatalf("a partial hit in a refused request consumed: %d remaining, want 10", got)
	}
}

// testInvalidContract: the combinations the Hit contract refuses.
func testInvalidContract(t *testing.T, newHarness Factory) {
	h := newHarness(t)
	h.SetTime(start())
	base := sluice.Hit{Key: uniqueKey(t, "invalid"), Limit: sluice.PerSecond(5), Cost: 2}
	for _, tc := range []struct {
		name string
		edit func(*sluice.Hit)
	}{
		{"negative minimum", func(h *sluice.Hit) { h.MinCost = -1 }},
		{"minimum above cost", func(h *sluice.Hit) { h.MinCost = 3 }},
		{"partial peek", func(h *sluice.Hit) { h.MinCost, h.Peek = 1, true }},
		{"partial forced", func(h *sluice.Hit) { h.MinCost, h.Force = 1, true }},
		{"forced peek", func(h *sluice.Hit) { h.Peek, h.Force = true, true }},
	} {
		hit := base
		tc.edit(&hit)
		var out [1]sluice.Result
		if err := h.Store.Take(context.Background(), []sluice.Hit{hit}, out[:]); !errors.Is(err, sluice.ErrInvalidHit) {
			t.Errorf("%s: %v, want ErrInvalidHit", tc.name, err)
		}
	}
	if got := peekAlg(t, h.Store, base); got != 5 {
		t.Fatalf("invalid hits consumed: %d remaining, want 5", got)
	}
}
