package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// testPenalty: a hit with a penalty (Hit.Block) is refused on its own, and
// from that refusal on every hit on its bucket is refused for Block, with
// RetryAfter the time left, whatever the bucket holds; peeks report the
// block; a blocked request consumes nothing of its other hits; After
// refusals within the limit's period start it; a reset lifts it; every
// client of the store sees it.
func testPenalty(t *testing.T, newHarness Factory) {
	blocked := func(t *testing.T, what string, r sluice.Result, left time.Duration) {
		t.Helper()
		if r.Allowed || !r.Blocked || r.RetryAfter != left || r.Remaining != 0 || r.ResetAfter < left || r.Unsatisfiable {
			t.Fatalf("%s: %+v, want blocked with retry after %v", what, r, left)
		}
	}
	for _, alg := range []sluice.Algorithm{sluice.TokenBucket, sluice.FixedWindow, sluice.SlidingWindow} {
		t.Run(alg.String(), func(t *testing.T) {
			h := newHarness(t)
			at := start()
			h.SetTime(at)
			hit := sluice.Hit{Key: uniqueKey(t, "abusive"), Limit: sluice.PerMinute(2), Algorithm: alg, Block: 15 * time.Minute}
			for i := range 2 {
				if r := take1(t, h.Store, hit); !r.Allowed || r.Blocked {
					t.Fatalf("take %d of 2 per minute: %+v, want allowed", i+1, r)
				}
			}
			first := take1(t, h.Store, hit)
			blocked(t, "the refusal that starts the block", first, 15*time.Minute)
			if !first.BlockStarted {
				t.Fatalf("the refusal that starts the block: %+v, want BlockStarted", first)
			}
			h.SetTime(at.Add(5 * time.Minute)) // the bucket is full again
			if r := take1(t, h.Store, hit); r.BlockStarted {
				t.Fatalf("5 minutes in: %+v, want a running block, not one started", r)
			} else {
				blocked(t, "5 minutes in", r, 10*time.Minute)
			}
			peek := hit
			peek.Peek = true
			blocked(t, "a peek 5 minutes in", take1(t, h.Store, peek), 10*time.Minute)
			// A result slot reused after a blocked answer says nothing of
			// the block: the store writes every field.
			fresh := sluice.Hit{Key: uniqueKey(t, "fresh"), Limit: sluice.PerMinute(2), Algorithm: alg, Block: 15 * time.Minute}
			reused := []sluice.Result{{Blocked: true, BlockStarted: true, Remembered: true, Unsatisfiable: true}}
			if err := h.Store.Take(context.Background(), []sluice.Hit{fresh}, reused); err != nil {
				t.Fatal(err)
			}
			if r := reused[0]; !r.Allowed || r.Blocked || r.BlockStarted || r.Remembered || r.Unsatisfiable {
				t.Fatalf("a fresh bucket's result in a slot that held a blocked one: %+v, want allowed, nothing left over", r)
			}
			other := sluice.Hit{Key: uniqueKey(t, "other"), Limit: sluice.PerMinute(2), Algorithm: alg}
			res := take(t, h.Store, other, hit)
			blocked(t, "in a request of two rules", res[1], 10*time.Minute)
			if !res[0].Allowed || res[0].Receipt.Taken != 0 || !res[0].Remembered && res[0].Remaining != 2 {
				t.Fatalf("the other rule of a blocked request: %+v, want nothing taken (remaining 2, as a peek finds it, unless answered from a memory of refusals)", res[0])
			}
			if r := take1(t, h.Store, other); !r.Allowed || r.Remaining != 1 {
				t.Fatalf("the other rule after the blocked request: %+v, want allowed with 1 left: the blocked request took nothing", r)
			}
			if h.Clients != nil {
				for _, s := range h.Clients(t, 2) {
					blocked(t, "another client", take1(t, s, hit), 10*time.Minute)
				}
			}
			h.SetTime(at.Add(15*time.Minute - time.Second))
			blocked(t, "a second before the end", take1(t, h.Store, hit), time.Second)
			h.SetTime(at.Add(15 * time.Minute))
			if r := take1(t, h.Store, hit); !r.Allowed || r.Blocked {
				t.Fatalf("when the block ends: %+v, want allowed", r)
			}
		})
	}
	t.Run("After", func(t *testing.T) {
		h := newHarness(t)
		at := start()
		h.SetTime(at)
		hit := sluice.Hit{Key: uniqueKey(t, "after"), Limit: sluice.PerSecond(1), Algorithm: sluice.FixedWindow, Block: time.Minute, After: 3}
		refused := func(what string, r sluice.Result) {
			t.Helper()
			if r.Allowed || r.Blocked || r.RetryAfter <= 0 {
				t.Fatalf("%s: %+v, want refused, not blocked", what, r)
			}
		}
		take1(t, h.Store, hit)
		refused("refusal 1 of 3", take1(t, h.Store, hit))
		refused("refusal 2 of 3", take1(t, h.Store, hit))
		// The period of the first refusal is over: the count starts again.
		h.SetTime(at.Add(time.Second))
		take1(t, h.Store, hit)
		refused("refusal 1 of 3 in a new period", take1(t, h.Store, hit))
		refused("refusal 2 of 3 in a new period", take1(t, h.Store, hit))
		h.SetTime(at.Add(1500 * time.Millisecond))
		blocked(t, "refusal 3 of 3", take1(t, h.Store, hit), time.Minute)
		h.SetTime(at.Add(61 * time.Second))
		blocked(t, "a minute minus half a second on", take1(t, h.Store, hit), 500*time.Millisecond)
		rs, ok := h.Store.(sluice.Resetter)
		if !ok {
			t.Skipf("%T does not implement sluice.Resetter", h.Store)
		}
		if err := rs.Reset(context.Background(), []sluice.Hit{hit}); err != nil {
			t.Fatal(err)
		}
		if r := take1(t, h.Store, hit); !r.Allowed || r.Blocked {
			t.Fatalf("after a reset: %+v, want allowed: a reset lifts the block", r)
		}
		refused("refusal 1 of 3 after a reset", take1(t, h.Store, hit))
	})
	t.Run("Forced", func(t *testing.T) {
		h := newHarness(t)
		h.SetTime(start())
		hit := sluice.Hit{Key: uniqueKey(t, "forced"), Limit: sluice.PerMinute(1), Block: time.Hour}
		forced := hit
		forced.Force, forced.Cost = true, 2
		if r := take1(t, h.Store, forced); r.Blocked {
			t.Fatalf("a forced charge into debt: %+v, want no block: forced hits neither count nor are blocked", r)
		}
		if r := take1(t, h.Store, hit); r.Allowed || !r.Blocked {
			t.Fatalf("after the forced charge: %+v, want the refusal that blocks", r)
		}
		if r := take1(t, h.Store, forced); r.Blocked {
			t.Fatalf("a forced charge during a block: %+v, want not blocked", r)
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		h := newHarness(t)
		h.SetTime(start())
		base := sluice.Hit{Key: uniqueKey(t, "invalid"), Limit: sluice.PerMinute(1), Block: time.Minute}
		for _, tc := range []struct {
			name string
			edit func(*sluice.Hit)
		}{
			{"negative block", func(h *sluice.Hit) { h.Block = -time.Second }},
			{"block over 30 days", func(h *sluice.Hit) { h.Block = sluice.MaxBlock + time.Second }},
			{"after without block", func(h *sluice.Hit) { h.Block, h.After = 0, 2 }},
			{"negative after", func(h *sluice.Hit) { h.After = -1 }},
			{"shadow", func(h *sluice.Hit) { h.Shadow = true }},
			{"partial", func(h *sluice.Hit) { h.MinCost, h.Cost = 1, 2 }},
			{"sliding log", func(h *sluice.Hit) { h.Algorithm = sluice.SlidingLog }},
		} {
			hit := base
			tc.edit(&hit)
			var out [1]sluice.Result
			if err := h.Store.Take(context.Background(), []sluice.Hit{hit}, out[:]); !errors.Is(err, sluice.ErrInvalidHit) {
				t.Errorf("%s: %v, want an error wrapping ErrInvalidHit", tc.name, err)
			}
		}
	})
}
