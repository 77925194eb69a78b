package redisstore

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// group returns the slot group of hits, in slot.
func group(slot int, hits ...sluice.Hit) *slotGroup {
	g := newSlotGroup(slot)
	for i := range hits {
		g.add(i, &hits[i])
	}
	g.out = make([]sluice.Result, len(hits))
	return g
}

// capHit returns a hit of capacity c and cost 1.
func capHit(c int64) sluice.Hit { return sluice.Hit{Key: "k", Limit: sluice.PerHour(c), Cost: 1} }

// TestScarcityOrder: which group of a cross-slot request is decided
// first, if any, by the order, the buckets' capacities and costs, the
// requests in flight, the instances and the slots marked low.
func TestScarcityOrder(t *testing.T) {
	shadow := capHit(1)
	shadow.Shadow = true
	costly := capHit(5)
	costly.Cost = 3 // 5 / 3: one request's worth
	partial := capHit(5)
	partial.Cost, partial.MinCost = 5, 1 // passes with 1: five requests' worth
	for _, tc := range []struct {
		name      string
		groups    []*slotGroup
		order     order
		instances int
		inflight  int // other requests in flight on every slot
		low       []int
		first     int
	}{
		{"one slot can refuse", []*slotGroup{group(7, capHit(1)), group(3, shadow)}, orderAlways, 1, 0, nil, -1},
		{"roomy", []*slotGroup{group(7, capHit(5)), group(3, capHit(20))}, orderWhenScarce, 1, 0, nil, -1},
		{"both could run out: the lower slot on a tie", []*slotGroup{group(7, capHit(1)), group(3, capHit(1))}, orderWhenScarce, 1, 0, nil, 1},
		{"never", []*slotGroup{group(7, capHit(1)), group(3, capHit(1))}, orderNever, 1, 0, nil, -1},
		{"always: the smaller capacity", []*slotGroup{group(3, capHit(20)), group(7, capHit(5))}, orderAlways, 1, 0, nil, 1},
		{"one of two could run out", []*slotGroup{group(7, capHit(1)), group(3, capHit(20))}, orderWhenScarce, 1, 0, nil, -1},
		{"both low: the smaller capacity", []*slotGroup{group(3, capHit(20)), group(7, capHit(5))}, orderWhenScarce, 1, 0, []int{3, 7}, 1},
		{"one low, the other roomy", []*slotGroup{group(3, capHit(5)), group(7, capHit(20))}, orderWhenScarce, 1, 0, []int{7}, 1},
		{"one low, the other could run out", []*slotGroup{group(3, capHit(20)), group(7, capHit(1))}, orderWhenScarce, 1, 0, []int{3}, 1},
		{"in flight: 4 on 5 and 20", []*slotGroup{group(3, capHit(20)), group(7, capHit(5))}, orderWhenScarce, 1, 3, nil, -1},
		{"in flight: 11 on 5 and 20", []*slotGroup{group(3, capHit(20)), group(7, capHit(5))}, orderWhenScarce, 1, 10, nil, 1},
		{"instances: 3 on 5 and 5", []*slotGroup{group(3, capHit(5)), group(7, capHit(5))}, orderWhenScarce, 3, 0, nil, 0},
		{"instances unknown: 1", []*slotGroup{group(3, capHit(5)), group(7, capHit(5))}, orderWhenScarce, 0, 1, nil, -1},
		{"cost", []*slotGroup{group(3, capHit(2)), group(7, costly)}, orderWhenScarce, 1, 0, nil, -1},
		{"cost, both", []*slotGroup{group(3, capHit(1)), group(7, costly)}, orderWhenScarce, 1, 0, nil, 0},
		{"a partial hit's minimum", []*slotGroup{group(3, capHit(1)), group(7, partial)}, orderWhenScarce, 1, 0, nil, -1},
		{"a group's scarcest hit", []*slotGroup{group(3, capHit(2)), group(7, capHit(50), capHit(1))}, orderAlways, 1, 0, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := newScarcity(func() int { return tc.instances })
			for _, g := range tc.groups {
				sc.inflight[g.slot].Add(int32(tc.inflight))
			}
			for _, slot := range tc.low {
				sc.lowUntil[slot].Store(sc.now() + int64(time.Hour))
			}
			if got := sc.enter(tc.groups, tc.order); got != tc.first {
				t.Errorf("first = %d, want %d", got, tc.first)
			}
			sc.leave(tc.groups)
			for _, g := range tc.groups {
				if n := sc.inflight[g.slot].Load(); n != int32(tc.inflight) {
					t.Errorf("slot %d: %d in flight after leave, want %d", g.slot, n, tc.inflight)
				}
			}
		})
	}
}

// TestScarcityObserve: a decided enforcing hit marks its slot low for
// lowHold when it was refused or left its bucket empty; shadow hits,
// buckets with a request's worth left and failed groups do not.
func TestScarcityObserve(t *testing.T) {
	shadow := capHit(5)
	shadow.Shadow = true
	costly := capHit(10)
	costly.Cost = 3
	for _, tc := range []struct {
		name   string
		hit    sluice.Hit
		result sluice.Result
		failed bool
		low    bool
	}{
		{"refused", capHit(5), sluice.Result{Remaining: 3}, false, true},
		{"1 left", capHit(5), sluice.Result{Allowed: true, Remaining: 1}, false, false},
		{"empty", capHit(5), sluice.Result{Allowed: true}, false, true},
		{"less than the cost", costly, sluice.Result{Allowed: true, Remaining: 2}, false, true},
		{"a shadow hit refused", shadow, sluice.Result{}, false, false},
		{"failed", capHit(5), sluice.Result{}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var now int64 = 1
			sc := newScarcity(func() int { return 1 })
			sc.now = func() int64 { return now }
			g := group(9, tc.hit)
			g.out[0] = tc.result
			var err error
			if tc.failed {
				err = errors.New("failed")
			}
			sc.observe([]*slotGroup{g}, []error{err})
			other := group(2, capHit(100)) // never runs out
			low := func() bool {
				groups := []*slotGroup{g, other}
				defer sc.leave(groups)
				return sc.enter(groups, orderWhenScarce) >= 0
			}
			if got := low(); got != tc.low {
				t.Fatalf("low %v, want %v", got, tc.low)
			}
			now += int64(lowHold)
			if low() {
				t.Fatal("still low after lowHold")
			}
		})
	}
}
