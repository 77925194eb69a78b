package decide

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/rules"
)

// failed applies the on_fail policies of the rules the store failed
// (d.Failed: all of them, or, after a [sluice.PartialError], some) and
// sets d's verdict: any closed failed rule makes the request Unavailable;
// otherwise failed local rules decide in process (Refused if one refuses)
// and failed open rules let it through. The other rules count by their
// results. A request refused after a partial failure gives back what its
// decided hits took (see giveBack).
func (dc *Decider) failed(ctx context.Context, d *Decision) {
	closed, anyLocal, partial := false, false, false
	for i, rule := range d.m.Rules {
		switch {
		case !d.Failed[i]:
			partial = true
		case rule.Shadow:
		case rule.OnFail == rules.FailClosed:
			closed = true
		case rule.OnFail == rules.FailLocal:
			anyLocal = true
		}
	}
	localOK := true
	if anyLocal && !closed {
		ok, err := dc.local.decide(d.m.Rules, d.m.Hits, d.Results, d.Failed, d.Local)
		if err != nil { // cannot happen for validated rules; never refuse on it
			dc.logs.failure(ctx, dc.cfg.logger, err, false)
		} else {
			localOK = ok
		}
	}
	// The decided rules: a refused one refuses the request, and the store
	// has then given back the decided takes.
	decidedOK := true
	for i := range d.m.Rules {
		h := &d.m.Hits[i]
		if !d.Failed[i] && !h.Shadow && !h.Force && !h.Peek && !d.Results[i].Allowed {
			decidedOK = false
		}
	}
	dc.observe(ctx, d)
	dc.logs.failure(ctx, dc.cfg.logger, d.Err, closed)
	if partial && (closed || !localOK) && decidedOK {
		dc.giveBack(ctx, d)
	}
	switch {
	case closed:
		d.Verdict = Unavailable
	case !decidedOK:
		d.Verdict, d.headers = Refused, true
	case !localOK:
		d.Verdict = Refused // no rate-limit headers: on_fail rules never appear in them
	default:
		d.headers = partial
	}
}

// giveBack refunds what the decided hits of a request took when a failed
// rule's policy refuses it after a partial failure, so that a refused
// request consumes nothing. A refund is never retried (a retry can give
// back twice); one that fails is reported to the observer as a failed
// store call and logged, and loses at most the request's cost until the
// buckets refill.
func (dc *Decider) giveBack(ctx context.Context, d *Decision) {
	var refunds []sluice.Refund
	for i := range d.m.Hits {
		h := &d.m.Hits[i]
		if rc := d.Results[i].Receipt; !d.Failed[i] && rc.Taken > 0 && !h.Force && !h.Peek {
			refunds = append(refunds, sluice.Refund{Hit: *h, Receipt: rc})
		}
	}
	if len(refunds) == 0 {
		return
	}
	call, release := dc.callContext(ctx)
	start := time.Now()
	err := dc.partial.Refund(call, refunds)
	latency := time.Since(start)
	if release != nil {
		release()
	}
	dc.storeCall(ctx, latency, len(refunds), err)
	if err != nil {
		dc.logs.failure(ctx, dc.cfg.logger, fmt.Errorf("decide: refund of a refused request's decided rules: %w", err), true)
	}
}
