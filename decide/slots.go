package decide

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice"
)

// slotHolder refreshes the concurrency slots of a request in flight (see
// [sluice.SlotRefresher]) every third of their shortest hold, until the
// request is finished: the slots it took in the store, through the store,
// and those the local fallback gave it while the store was failing,
// through the fallback's own store. It keeps its own copy of the slots'
// receipts and writes them back into the outcome when it stops.
type slotHolder struct {
	stop, done chan struct{}
	idx        []int
	refreshes  []sluice.SlotRefresh
	receipts   []sluice.Receipt
	// inStore is how many of refreshes, the first ones, are of slots
	// taken in the store; the others are the local fallback's.
	inStore int
}

// timerClock is a clock with timers, such as storetest.Clock: a decider
// whose clock (WithClock) is one refreshes slots on its timers.
type timerClock interface {
	Timer(d time.Duration) (<-chan time.Time, func() bool)
}

// holdSlots starts refreshing the slots o took, when o was admitted: those
// it took in the store, when the store can refresh them, and those the
// local fallback gave it (see [Outcome.localSlot]), which the fallback's
// store refreshes. A slot left unrefreshed would end with its hold while
// the request still runs, and admit another beyond the rule's max.
func (dc *Decider) holdSlots(ctx context.Context, o *Outcome) {
	if o.Verdict != Admitted {
		return
	}
	rf, _ := dc.store.(sluice.SlotRefresher)
	var h *slotHolder
	if rf != nil {
		for i := range o.Hits {
			if o.Hits[i].Concurrency && o.takenBack(i) {
				h = h.hold(o, i)
			}
		}
	}
	if h != nil {
		h.inStore = len(h.idx)
	}
	for i := range o.Hits {
		if o.localSlot(i) {
			h = h.hold(o, i)
		}
	}
	if h == nil {
		return
	}
	every := o.Hits[h.idx[0]].Limit.Period
	for j, i := range h.idx {
		every = min(every, o.Hits[i].Limit.Period)
		h.refreshes = append(h.refreshes, sluice.SlotRefresh{Hit: o.Hits[i], Receipt: &h.receipts[j]})
	}
	o.slots = h
	go dc.refreshLoop(context.WithoutCancel(ctx), rf, h, every/3)
}

// hold adds the slot of o's rule i to h, a new holder when h is nil, and
// returns h.
func (h *slotHolder) hold(o *Outcome, i int) *slotHolder {
	if h == nil {
		h = &slotHolder{stop: make(chan struct{}), done: make(chan struct{})}
	}
	h.idx = append(h.idx, i)
	h.receipts = append(h.receipts, o.Results[i].Receipt)
	return h
}

// refreshLoop refreshes h's slots every period until h is stopped: the
// first h.inStore through rf, the store, the others through the local
// fallback's store. Each refresh's Held is the time since the last one was
// sent (the first: since the take's answer arrived), so a slot's new start
// is never ahead of the store's clock.
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
		if local := h.refreshes[h.inStore:]; len(local) > 0 {
			// In process, first: the store's call below may take the whole
			// budget. No store call to time or report; it fails only for a
			// refresh CheckSlotRefreshes refuses, which cannot be.
			if err := dc.local.store.RefreshSlots(ctx, local); err != nil {
				dc.logs.problem(ctx, dc.cfg.logger, fmt.Errorf("decide: refreshing the slots the local fallback gave a request: %w", err))
			}
		}
		if n := h.inStore; n > 0 {
			call, release := dc.callContext(ctx)
			start := time.Now()
			err := rf.RefreshSlots(call, h.refreshes[:n])
			latency := time.Since(start)
			if release != nil {
				release()
			}
			dc.storeCall(ctx, latency, n, err)
			if err != nil {
				dc.logs.problem(ctx, dc.cfg.logger, fmt.Errorf("decide: refreshing a request's slots: %w", err))
			}
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
