package decide

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice"
)

// slotHolder refreshes the concurrency slots of a request in flight (see
// [sluice.SlotRefresher]) every third of their shortest hold, until the
// request is finished. It keeps its own copy of the slots' receipts and
// writes them back into the outcome when it stops.
type slotHolder struct {
	stop, done chan struct{}
	idx        []int
	refreshes  []sluice.SlotRefresh
	receipts   []sluice.Receipt
}

// timerClock is a clock with timers, such as storetest.Clock: a decider
// whose clock (WithClock) is one refreshes slots on its timers.
type timerClock interface {
	Timer(d time.Duration) (<-chan time.Time, func() bool)
}

// holdSlots starts refreshing the slots o took, when o was admitted, took
// some in the store and the store can refresh them.
func (dc *Decider) holdSlots(ctx context.Context, o *Outcome) {
	rf, ok := dc.store.(sluice.SlotRefresher)
	if !ok || o.Verdict != Admitted {
		return
	}
	var h *slotHolder
	var every time.Duration
	for i := range o.Hits {
		hit := &o.Hits[i]
		if !hit.Concurrency || !o.takenBack(i) {
			continue
		}
		if h == nil {
			h = &slotHolder{stop: make(chan struct{}), done: make(chan struct{})}
			every = hit.Limit.Period
		}
		every = min(every, hit.Limit.Period)
		h.idx = append(h.idx, i)
		h.receipts = append(h.receipts, o.Results[i].Receipt)
	}
	if h == nil {
		return
	}
	for j, i := range h.idx {
		h.refreshes = append(h.refreshes, sluice.SlotRefresh{Hit: o.Hits[i], Receipt: &h.receipts[j]})
	}
	o.slots = h
	go dc.refreshLoop(context.WithoutCancel(ctx), rf, h, every/3)
}

// refreshLoop refreshes h's slots every period until h is stopped. Each
// refresh's Held is the time since the last one was sent (the first: since
// the take's answer arrived), so a slot's new start is never ahead of the
// store's clock.
func (dc *Decider) refreshLoop(ctx context.Context, rf sluice.SlotRefresher, h *slotHolder, every time.Duration) {
	defer close(h.done)
	last := dc.cfg.now()
	for {
		var c <-chan time.Time
		var stop func() bool
		if tc, ok := dc.cfg.clock.(timerClock); ok {
			c, stop = tc.Timer(every)
		} else {
			t := time.NewTimer(every)
			c, stop = t.C, t.Stop
		}
		select {
		case <-h.stop:
			stop()
			return
		case <-c:
		}
		now := dc.cfg.now()
		held := now.Sub(last)
		if held <= 0 {
			continue
		}
		last = now
		for j := range h.refreshes {
			h.refreshes[j].Held = held
		}
		call, release := dc.callContext(ctx)
		start := time.Now()
		err := rf.RefreshSlots(call, h.refreshes)
		latency := time.Since(start)
		if release != nil {
			release()
		}
		dc.storeCall(ctx, latency, len(h.refreshes), err)
		if err != nil {
			dc.logs.problem(ctx, dc.cfg.logger, fmt.Errorf("decide: refreshing a request's slots: %w", err))
		}
	}
}

// stopHolding stops refreshing o's slots and writes their receipts back,
// so that Finish frees them as they stand.
func (o *Outcome) stopHolding() {
	h := o.slots
	if h == nil {
		return
	}
	o.slots = nil
	close(h.stop)
	<-h.done
	for j, i := range h.idx {
		o.Results[i].Receipt = h.receipts[j]
	}
}
