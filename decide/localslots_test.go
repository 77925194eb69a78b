package decide_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/storetest"
)

// downSlotStore is a store that can hold slots, as Redis can, while it is
// down: its takes, refreshes of slots and refunds all fail.
type downSlotStore struct{ failingStore }

func (downSlotStore) RefreshSlots(context.Context, []sluice.SlotRefresh) error { return down(0) }

func (downSlotStore) Refund(context.Context, []sluice.Refund) error { return down(0) }

// firedTimer is a timer of a steppedClock: the test steps the clock by d
// and sends on fire.
type firedTimer struct {
	d    time.Duration
	fire chan<- time.Time
}

// steppedClock is a fake clock whose timers the test fires: each one
// asked for is handed over on timers. A decider refreshing slots asks for
// its next timer only once its last refresh is done, so receiving a timer
// says the refresh before it was made.
type steppedClock struct {
	*storetest.Clock
	timers chan firedTimer
}

func (c *steppedClock) Timer(d time.Duration) (<-chan time.Time, func() bool) {
	fire := make(chan time.Time, 1)
	c.timers <- firedTimer{d: d, fire: fire}
	return fire, func() bool { return true }
}

// A slot the local fallback gave while the store is down is refreshed like
// one taken in the store: a request that runs 3 × its rule's hold keeps
// it, every hold/3 on the decider's clock, and a second request of the
// same identity is refused throughout; once the first is over, its slot is
// freed by the receipt the last refresh left, and the next is admitted.
func TestLocalSlotRefreshedWhileRunning(t *testing.T) {
	const hold = time.Minute
	clock := &steppedClock{Clock: storetest.NewClock(time.Unix(1_700_000_000, 0)), timers: make(chan firedTimer, 4)}
	dc, err := decide.New(downSlotStore{failingStore{down(0)}}, decide.WithInstances(1), decide.WithClock(clock), quiet)
	if err != nil {
		t.Fatal(err)
	}
	set := rules.MustNew(rules.Rule{Name: "in-flight", Key: keyfunc.Global(), OnFail: rules.FailLocal,
		Concurrency: &rules.Concurrency{Max: 1, Hold: hold}})
	check := func() *decide.Outcome { return dc.Check(set, httptest.NewRequest("GET", "/", nil), nil) }
	ctx := context.Background()

	start := clock.Now()
	first := check()
	if first.Verdict != decide.Admitted || !first.Local[0] {
		first.Finish(ctx, 0)
		t.Fatalf("the first request: %v, local %v; want admitted by the local fallback", first.Verdict, first.Local[0])
	}
	refreshing := true
	for step := 0; ; step++ {
		ran := clock.Now().Sub(start)
		var next firedTimer
		if refreshing {
			select {
			case next = <-clock.timers: // the refresh before it, if any, was made
				if next.d != hold/3 {
					t.Errorf("at %v: the slot is refreshed every %v, want %v", ran, next.d, hold/3)
				}
			case <-time.After(10 * time.Second): // a ceiling against a hang
				t.Errorf("at %v: the slot the local fallback gave is not refreshed", ran)
				refreshing = false
			}
		}
		second := check()
		if second.Verdict != decide.Refused {
			t.Errorf("%v into the first request: a second one %v, want refused (max 1)", ran, second.Verdict)
		}
		second.Finish(ctx, 0)
		if step == 9 { // 9 refreshes: 3 × hold
			break
		}
		if refreshing {
			next.fire <- clock.Advance(next.d)
		} else {
			clock.Advance(hold / 3)
		}
	}
	first.Finish(ctx, 0)
	if ran := clock.Now().Sub(start); ran < 3*hold {
		t.Errorf("the first request ran %v, want 3 × %v", ran, hold)
	}
	after := check()
	if after.Verdict != decide.Admitted {
		t.Errorf("after the first request: %v, want admitted (its slot freed)", after.Verdict)
	}
	after.Finish(ctx, 0)
}

// refreshingPartialStore is a partialStore (its calls' first hit fails,
// the others pass) that can refresh slots, and records the refreshes.
type refreshingPartialStore struct {
	partialStore
	refreshed chan []string // the keys of each refresh
}

func (s *refreshingPartialStore) RefreshSlots(_ context.Context, refreshes []sluice.SlotRefresh) error {
	keys := make([]string, len(refreshes))
	for i, r := range refreshes {
		keys[i] = r.Hit.Key
	}
	s.refreshed <- keys
	return nil
}

// A request whose slots lie partly in the store and partly with the local
// fallback (the store failed one of its hits): each slot is refreshed
// where it is held, the store's through the store and the fallback's in
// process, and at the end each is freed there: the store gets back its
// slot alone, and the fallback's is free for the next request.
func TestMixedSlotsRefreshedWhereHeld(t *testing.T) {
	const hold = time.Minute
	clock := &steppedClock{Clock: storetest.NewClock(time.Unix(1_700_000_000, 0)), timers: make(chan firedTimer, 4)}
	store := &refreshingPartialStore{refreshed: make(chan []string, 4)}
	dc, err := decide.New(store, decide.WithInstances(1), decide.WithClock(clock), quiet)
	if err != nil {
		t.Fatal(err)
	}
	set := rules.MustNew(
		rules.Rule{Name: "local-slots", Key: keyfunc.Global(), OnFail: rules.FailLocal, Concurrency: &rules.Concurrency{Max: 1, Hold: hold}},
		rules.Rule{Name: "store-slots", Key: keyfunc.Global(), OnFail: rules.FailLocal, Concurrency: &rules.Concurrency{Max: 5, Hold: hold}},
	)
	check := func() *decide.Outcome { return dc.Check(set, httptest.NewRequest("GET", "/", nil), nil) }
	ctx := context.Background()

	first := check()
	if first.Verdict != decide.Admitted || len(first.Local) != 2 || !first.Local[0] || first.Local[1] {
		first.Finish(ctx, 0)
		t.Fatalf("the first request: %v, local %v; want admitted, its first slot by the local fallback and its second by the store", first.Verdict, first.Local)
	}
	storeKey := first.Hits[1].Key
	for range 3 {
		var next firedTimer
		select {
		case next = <-clock.timers:
		case <-time.After(10 * time.Second): // a ceiling against a hang
			first.Finish(ctx, 0)
			t.Fatal("no refresh timer")
		}
		next.fire <- clock.Advance(next.d)
		select {
		case keys := <-store.refreshed:
			if len(keys) != 1 || keys[0] != storeKey {
				t.Errorf("the store refreshed %q, want the store's slot alone (%q)", keys, storeKey)
			}
		case <-time.After(10 * time.Second):
			t.Error("the store's slot was not refreshed")
		}
		second := check()
		if second.Verdict != decide.Refused {
			t.Errorf("%v into the first request: a second one %v, want refused (the local slot is held)", clock.Now().Sub(time.Unix(1_700_000_000, 0)), second.Verdict)
		}
		second.Finish(ctx, 0)
	}
	store.mu.Lock()
	store.refunds = nil
	store.mu.Unlock()
	first.Finish(ctx, 0)
	store.mu.Lock()
	refunds := store.refunds
	store.mu.Unlock()
	if len(refunds) != 1 || refunds[0].Hit.Key != storeKey {
		t.Errorf("at the end the store got back %d slots (%+v), want the store's slot alone", len(refunds), refunds)
	}
	after := check()
	if after.Verdict != decide.Admitted {
		t.Errorf("after the first request: %v, want admitted (its local slot freed)", after.Verdict)
	}
	after.Finish(ctx, 0)
}
