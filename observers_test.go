package sluice_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice"
)

// counter counts the decisions, store calls and request-set limits it is
// given.
type counter struct{ decisions, calls, limits int }

func (c *counter) Observe(context.Context, sluice.Decision)           { c.decisions++ }
func (c *counter) ObserveStoreCall(context.Context, sluice.StoreCall) { c.calls++ }
func (c *counter) ObserveRequestLimit(context.Context, sluice.RequestLimitEvent) {
	c.limits++
}

// funcHolder is a comparable type whose values may hold something that
// cannot be compared.
type funcHolder struct{ f any }

func (funcHolder) Observe(context.Context, sluice.Decision) {}

// Observers forwards each decision and store call once to each observer,
// however often it is named: directly, or within another Observers.
func TestObserversCountOnce(t *testing.T) {
	a, b := &counter{}, &counter{}
	cases := []struct {
		name  string
		obs   sluice.Observer
		wantB int
	}{
		{"each once", sluice.Observers(a, nil, b), 1},
		{"named twice", sluice.Observers(a, a), 0},
		{"within another", sluice.Observers(sluice.Observers(a, b), a, b), 1},
		{"nested twice", sluice.Observers(sluice.Observers(a), sluice.Observers(nil, a)), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			*a, *b = counter{}, counter{}
			tc.obs.Observe(context.Background(), sluice.Decision{Rule: "r"})
			tc.obs.(sluice.StoreCallObserver).ObserveStoreCall(context.Background(), sluice.StoreCall{Hits: 1})
			tc.obs.(sluice.RequestLimitObserver).ObserveRequestLimit(context.Background(), sluice.RequestLimitEvent{Rule: "r"})
			if *a != (counter{1, 1, 1}) {
				t.Errorf("first observer got %d decisions, %d store calls and %d request limits, want 1 each", a.decisions, a.calls, a.limits)
			}
			if *b != (counter{tc.wantB, tc.wantB, tc.wantB}) {
				t.Errorf("second observer got %d decisions, %d store calls and %d request limits, want %d each", b.decisions, b.calls, b.limits, tc.wantB)
			}
		})
	}
}

// Observers that cannot be compared are each kept, never compared (which
// would panic).
func TestObserversIncomparable(t *testing.T) {
	n := 0
	f := sluice.ObserverFunc(func(context.Context, sluice.Decision) { n++ })
	h := funcHolder{f: func() {}}
	o := sluice.Observers(f, f, h, h)
	o.Observe(context.Background(), sluice.Decision{})
	if n != 2 {
		t.Fatalf("a function observer named twice got %d decisions, want 2: functions cannot be told apart", n)
	}
}
