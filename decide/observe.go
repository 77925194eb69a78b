package decide

import (
	"context"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/rules"
)

// observe reports how each rule took part in a request: decided by the
// store (d.Err nil, or a rule not in d.Failed), or, for the rules the
// store failed, by their on_fail policies and the local fallback
// (d.Local).
func (dc *Decider) observe(ctx context.Context, d *Decision) {
	o := dc.cfg.observer
	if o == nil {
		return
	}
	for i, rule := range d.m.Rules {
		failed := d.Err != nil && d.Failed[i]
		dec := sluice.Decision{Rule: rule.Name, Shadow: rule.Shadow, Latency: d.Latency}
		if failed {
			dec.Err = d.Err
		}
		res := d.Results[i]
		switch {
		case failed && d.Local[i]:
			dec.Outcome, dec.Result = sluice.OutcomeLocal, res
		case failed && rule.OnFail == rules.FailClosed && !rule.Shadow:
			dec.Outcome = sluice.OutcomeFailedClosed
		case failed:
			dec.Outcome = sluice.OutcomeFailedOpen
		case res.Remembered && res.Allowed:
			continue // not decided: the store refused the request from memory
		case res.Allowed:
			dec.Outcome, dec.Result = sluice.OutcomeAllowed, res
		case rule.Shadow:
			dec.Outcome, dec.Result = sluice.OutcomeShadowDenied, res
		default:
			dec.Outcome, dec.Result = sluice.OutcomeDenied, res
		}
		if d.m.Bypass != "" && dec.Outcome == sluice.OutcomeAllowed {
			// A bypass entry's limit let the request through.
			dec.Outcome = sluice.OutcomeBypassed
		}
		o.Observe(ctx, dec)
	}
}
