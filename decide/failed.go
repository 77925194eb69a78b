package decide

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/rules"
)

// failed applies the on_fail policies of the rules the store failed
// (o.Failed: all of them, or, after a [sluice.PartialError], some) and
// sets o's verdict: any closed failed rule makes the request Unavailable;
// otherwise failed local rules decide in process (Refused if one refuses)
// and failed open rules let it through. The other rules count by their
// results. A request refused after a partial failure gives back what its
// decided hits took (see giveBack).
func (dc *Decider) failed(ctx context.Context, o *Outcome) {
	closed, anyLocal, partial := false, false, false
	for i, rule := range o.Rules {
		switch {
		case !o.Failed[i]:
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
		ok, err := dc.local.decide(o.Rules, o.Hits, o.Results, o.Failed, o.Local)
		if err != nil { // cannot happen for validated rules; never refuse on it
			dc.logs.problem(ctx, dc.cfg.logger, err)
		} else {
			localOK = ok
		}
	}
	// The decided rules: a refused one refuses the request, and the store
	// has then given back the decided takes.
	decidedOK := true
	for i := range o.Rules {
		h := &o.Hits[i]
		if !o.Failed[i] && !h.Shadow && !h.Force && !h.Peek && !o.Results[i].Allowed {
			decidedOK = false
		}
	}
	dc.observe(ctx, o)
	dc.logs.failure(ctx, dc.cfg.logger, o)
	if partial && (closed || !localOK) && decidedOK {
		dc.giveBack(ctx, o)
	}
	switch {
	case closed:
		o.Verdict = Unavailable
	case !decidedOK:
		o.Verdict, o.headers = Refused, true
	case !localOK:
		o.Verdict = Refused // no rate-limit fields: on_fail rules never appear in them
	default:
		o.headers = partial
	}
}

// giveBack refunds what the decided hits of a request took when a failed
// rule's policy refuses it after a partial failure, so that a refused
// request consumes nothing. A refund is never retried (a retry can give
// back twice); one that fails is reported to the observer as a failed
// store call and logged, and loses at most the request's cost until the
// buckets refill.
func (dc *Decider) giveBack(ctx context.Context, o *Outcome) {
	var refunds []sluice.Refund
	for i := range o.Hits {
		h := &o.Hits[i]
		if rc := o.Results[i].Receipt; !o.Failed[i] && rc.Taken > 0 && !h.Force && !h.Peek {
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
		dc.logs.problem(ctx, dc.cfg.logger, fmt.Errorf("decide: refund of a refused request's decided rules: %w", err))
	}
}
