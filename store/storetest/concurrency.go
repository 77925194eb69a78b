package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// testConcurrency: a concurrency hit (Hit.Concurrency) takes one of
// Limit.Rate slots; a refund of its receipt frees the slot, and a slot
// never freed expires after Limit.Period (the hold). A refused hit's
// RetryAfter is at most sluice.ConcurrencyRetry. Peeks report the free
// slots; a request refused by another rule takes no slot, and one refused
// for want of a slot consumes nothing of its other rules; every client of
// the store sees the slots.
func testConcurrency(t *testing.T, newHarness Factory) {
	const hold = time.Minute
	slot := func(key string) sluice.Hit {
		return sluice.Hit{Key: key, Limit: sluice.Per(2, hold), Algorithm: sluice.SlidingLog, Concurrency: true}
	}
	refused := func(t *testing.T, what string, r sluice.Result) {
		t.Helper()
		if r.Allowed || r.Remaining != 0 || r.RetryAfter <= 0 || r.RetryAfter > sluice.ConcurrencyRetry || r.Unsatisfiable || r.Receipt.Taken != 0 {
			t.Fatalf("%s: %+v, want refused with retry after at most %v", what, r, sluice.ConcurrencyRetry)
		}
	}
	t.Run("SlotsTakenAndFreed", func(t *testing.T) {
		h := newHarness(t)
		rf := refunder(t, h)
		at := start()
		h.SetTime(at)
		hit := slot(uniqueKey(t, "slots"))
		a := take1(t, h.Store, hit)
		if !a.Allowed || a.Remaining != 1 || a.Receipt.Taken != 1 {
			t.Fatalf("first slot of 2: %+v, want allowed, 1 free, a receipt of 1", a)
		}
		h.SetTime(at.Add(time.Second))
		b := take1(t, h.Store, hit)
		if !b.Allowed || b.Remaining != 0 || b.Receipt.Taken != 1 {
			t.Fatalf("second slot of 2: %+v, want allowed, 0 free", b)
		}
		refused(t, "a third in flight", take1(t, h.Store, hit))
		peek := hit
		peek.Peek = true
		if r := take1(t, h.Store, peek); r.Allowed || r.Remaining != 0 {
			t.Fatalf("a peek with both slots held: %+v, want refused, 0 free", r)
		}
		if h.Clients != nil {
			for _, s := range h.Clients(t, 2) {
				refused(t, "another client", take1(t, s, hit))
			}
		}
		refund(t, rf, sluice.Refund{Hit: hit, Receipt: a.Receipt})
		c := take1(t, h.Store, hit)
		if !c.Allowed || c.Remaining != 0 {
			t.Fatalf("after the first slot was freed: %+v, want allowed, 0 free", c)
		}
		refund(t, rf, sluice.Refund{Hit: hit, Receipt: b.Receipt}, sluice.Refund{Hit: hit, Receipt: c.Receipt})
		if r := take1(t, h.Store, peek); !r.Allowed || r.Remaining != 2 {
			t.Fatalf("a peek with every slot freed: %+v, want 2 free", r)
		}
	})
	t.Run("HeldSlotsExpireAfterHold", func(t *testing.T) {
		h := newHarness(t)
		rf := refunder(t, h)
		at := start()
		h.SetTime(at)
		hit := slot(uniqueKey(t, "expire"))
		a := take1(t, h.Store, hit)
		h.SetTime(at.Add(10 * time.Second))
		b := take1(t, h.Store, hit)
		if !a.Allowed || !b.Allowed {
			t.Fatalf("two slots of 2: %+v, %+v, want both allowed", a, b)
		}
		h.SetTime(at.Add(hold - time.Second))
		refused(t, "a second before the first slot's hold ends", take1(t, h.Store, hit))
		h.SetTime(at.Add(hold))
		c := take1(t, h.Store, hit)
		if !c.Allowed || c.Remaining != 0 {
			t.Fatalf("when the first slot's hold ends: %+v, want allowed, 0 free", c)
		}
		// Freeing the expired slot late frees nobody else's.
		refund(t, rf, sluice.Refund{Hit: hit, Receipt: a.Receipt})
		refused(t, "after a late free of an expired slot", take1(t, h.Store, hit))
		h.SetTime(at.Add(hold + 10*time.Second))
		if r := take1(t, h.Store, hit); !r.Allowed || r.Remaining != 0 {
			t.Fatalf("when the second slot's hold ends: %+v, want allowed, 0 free", r)
		}
	})
	t.Run("RefreshedSlotOutlivesItsHold", func(t *testing.T) {
		h := newHarness(t)
		rf := refunder(t, h)
		sr, ok := h.Store.(sluice.SlotRefresher)
		if !ok {
			t.Skipf("%T does not implement sluice.SlotRefresher", h.Store)
		}
		at := start()
		h.SetTime(at)
		hit := slot(uniqueKey(t, "refresh"))
		hit.Limit = sluice.Per(1, hold)
		r := take1(t, h.Store, hit)
		if !r.Allowed {
			t.Fatalf("the slot: %+v, want allowed", r)
		}
		rc := r.Receipt
		// A request that runs 3 × hold, refreshing its slot every hold/3.
		for step := 1; step <= 9; step++ {
			h.SetTime(at.Add(time.Duration(step) * hold / 3))
			if err := sr.RefreshSlots(context.Background(), []sluice.SlotRefresh{{Hit: hit, Receipt: &rc, Held: hold / 3}}); err != nil {
				t.Fatalf("refresh %d: %v", step, err)
			}
			refused(t, fmt.Sprintf("%v into a request refreshing its slot", time.Duration(step)*hold/3), take1(t, h.Store, hit))
		}
		refund(t, rf, sluice.Refund{Hit: hit, Receipt: rc})
		s := take1(t, h.Store, hit)
		if !s.Allowed {
			t.Fatalf("after the refreshed slot was freed: %+v, want allowed", s)
		}
		// A slot that is not refreshed expires; refreshing it late holds
		// nothing.
		h.SetTime(at.Add(3*hold + hold))
		late := s.Receipt
		if err := sr.RefreshSlots(context.Background(), []sluice.SlotRefresh{{Hit: hit, Receipt: &late, Held: hold}}); err != nil {
			t.Fatalf("a late refresh: %v", err)
		}
		if r := take1(t, h.Store, hit); !r.Allowed {
			t.Fatalf("after a late refresh of an expired slot: %+v, want allowed", r)
		}
		bad := rc
		if err := sr.RefreshSlots(context.Background(), []sluice.SlotRefresh{{Hit: hit, Receipt: &bad}}); !errors.Is(err, sluice.ErrInvalidHit) {
			t.Fatalf("a refresh held 0: %v, want ErrInvalidHit", err)
		}
	})
	t.Run("AllOrNothingWithRates", func(t *testing.T) {
		h := newHarness(t)
		at := start()
		h.SetTime(at)
		hit := slot(uniqueKey(t, "inflight"))
		rate := sluice.Hit{Key: uniqueKey(t, "rate"), Limit: sluice.PerMinute(1), Algorithm: sluice.FixedWindow}
		if res := take(t, h.Store, rate, hit); !res[0].Allowed || !res[1].Allowed {
			t.Fatalf("a rate and a slot: %+v, want both allowed", res)
		}
		res := take(t, h.Store, rate, hit)
		if res[0].Allowed || !res[1].Allowed || res[1].Receipt.Taken != 0 {
			t.Fatalf("refused by the rate: %+v, want the slot's hit allowed on its own and nothing taken", res)
		}
		peek := hit
		peek.Peek = true
		if r := take1(t, h.Store, peek); r.Remaining != 1 {
			t.Fatalf("after a request refused by its rate: %+v, want 1 free slot: it took none", r)
		}
		other := sluice.Hit{Key: uniqueKey(t, "other"), Limit: sluice.PerMinute(5), Algorithm: sluice.TokenBucket}
		if r := take1(t, h.Store, hit); !r.Allowed {
			t.Fatalf("second slot: %+v, want allowed", r)
		}
		res = take(t, h.Store, other, hit)
		refused(t, "the slot of a request with every slot held", res[1])
		if !res[0].Allowed || res[0].Receipt.Taken != 0 {
			t.Fatalf("the rate of a request refused a slot: %+v, want nothing taken", res[0])
		}
		if r := take1(t, h.Store, other); !r.Allowed || r.Remaining != 4 {
			t.Fatalf("the rate after a request refused a slot: %+v, want 4 left: that request took nothing", r)
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		h := newHarness(t)
		for _, c := range []struct {
			name string
			edit func(*sluice.Hit)
		}{
			{"token bucket", func(h *sluice.Hit) { h.Algorithm = sluice.TokenBucket }},
			{"fixed window", func(h *sluice.Hit) { h.Algorithm = sluice.FixedWindow }},
			{"cost 2", func(h *sluice.Hit) { h.Cost = 2 }},
			{"shadow", func(h *sluice.Hit) { h.Shadow = true }},
			{"forced", func(h *sluice.Hit) { h.Force = true }},
			{"penalty", func(h *sluice.Hit) { h.Block = time.Minute }},
		} {
			hit := slot(uniqueKey(t, "invalid"))
			c.edit(&hit)
			var out [1]sluice.Result
			if err := h.Store.Take(context.Background(), []sluice.Hit{hit}, out[:]); !errors.Is(err, sluice.ErrInvalidHit) {
				t.Errorf("a concurrency hit, %s: %v, want ErrInvalidHit", c.name, err)
			}
		}
	})
}
