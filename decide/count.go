package decide

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/rules"
)

// errNoRefunds: a store that cannot give back, with rules that count by
// outcome.
var errNoRefunds = errors.New("decide: the store cannot give back (not a sluice.Refunder): rules that count by outcome count every request")

// Counting reports whether a rule of o counts by outcome
// ([rules.Rule.Count]) and took from the store for the request: its front
// end should then report how the request ended to [Outcome.Finish]. Only
// an admitted request counts by outcome; a refused one took nothing.
func (o *Outcome) Counting() bool {
	if o.Matched == nil || o.Verdict != Admitted {
		return false
	}
	for i, rule := range o.Rules {
		if rule.Count != nil && o.takenBack(i) {
			return true
		}
	}
	return false
}

// takenBack reports whether rule i's hit took from the store something a
// refund can give back: decided by the store (not failed, not the local
// fallback's), neither a peek nor forced, and taken.
func (o *Outcome) takenBack(i int) bool {
	h := &o.Hits[i]
	return !o.Failed[i] && !h.Peek && !h.Force && o.Results[i].Receipt.Taken > 0
}

// uncounted reports whether rule i counts by outcome and the request's
// end, o.status, is not one it counts: what it took is given back, and an
// after-the-fact charge skips it.
func (o *Outcome) uncounted(i int) bool {
	c := o.Rules[i].Count
	return c != nil && !c.Counts(o.status)
}

// giveBackEnded gives back, in one store call, the slots the request
// holds for its concurrency rules and, when its end (o.status) is known
// (ended), what it took for the rules counting by outcome that do not
// count that end. Like every refund it is never retried; a failure is
// reported to the observer as a failed store call and logged: it counts
// the request, and leaves its slots held until their hold ends.
func (dc *Decider) giveBackEnded(ctx context.Context, o *Outcome, ended bool) {
	var refunds []sluice.Refund
	for i := range o.Rules {
		if o.takenBack(i) && (o.Hits[i].Concurrency || ended && o.uncounted(i)) {
			refunds = append(refunds, sluice.Refund{Hit: o.Hits[i], Receipt: o.Results[i].Receipt})
		}
	}
	if len(refunds) == 0 {
		return
	}
	rf, ok := dc.store.(sluice.Refunder)
	if !ok {
		dc.logs.problem(ctx, dc.cfg.logger, errNoRefunds)
		return
	}
	call, release := dc.callContext(ctx)
	start := time.Now()
	err := rf.Refund(call, refunds)
	latency := time.Since(start)
	if release != nil {
		release()
	}
	dc.storeCall(ctx, latency, len(refunds), err)
	if err != nil {
		dc.logs.problem(ctx, dc.cfg.logger, fmt.Errorf("decide: giving back a request's slots, or what its status (%v) does not count: %w", o.status, err))
	}
}

// warnUnknownEnd logs, once in the decider's life, that a front end
// finished a request a rule counts by outcome without saying how it
// ended: such rules then count every request, which is safe but likely
// not what their author meant.
func (dc *Decider) warnUnknownEnd(ctx context.Context) {
	dc.unknownEnd.Do(func() {
		dc.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "sluice: a request was finished without its status: rules that count by outcome count every request of this front end")
	})
}

// statusOf returns the status Finish was given, or the zero (unknown)
// Status.
func statusOf(status []rules.Status) rules.Status {
	if len(status) == 0 {
		return rules.Status{}
	}
	return status[0]
}
