package decide

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
)

// observe reports how each rule took part in a request: decided by the
// store (no store error, or a rule not in o.Failed), or, for the rules the
// store failed, by their on_fail policies and the local fallback
// (o.Local).
func (dc *Decider) observe(ctx context.Context, o *Outcome) {
	obs := dc.cfg.observer
	if obs == nil {
		return
	}
	for i, rule := range o.Rules {
		failed := o.storeErr != nil && o.Failed[i]
		dec := sluice.Decision{Rule: rule.Name, Shadow: rule.Shadow, Latency: o.Latency}
		if failed {
			dec.Err = o.storeErr
		}
		res := o.Results[i]
		switch {
		case failed:
			dec.Outcome = o.onFail(i)
			if dec.Outcome == sluice.OutcomeLocal {
				dec.Result = res
			}
		case res.Remembered && res.Allowed:
			continue // not decided: the store refused the request from memory
		case res.Allowed:
			dec.Outcome, dec.Result = sluice.OutcomeAllowed, res
		case rule.Shadow:
			dec.Outcome, dec.Result = sluice.OutcomeShadowDenied, res
		case res.Blocked:
			dec.Outcome, dec.Result = sluice.OutcomeBlocked, res
		default:
			dec.Outcome, dec.Result = sluice.OutcomeDenied, res
		}
		if o.Bypass != "" && dec.Outcome == sluice.OutcomeAllowed {
			// A bypass entry's limit let the request through.
			dec.Outcome = sluice.OutcomeBypassed
		}
		obs.Observe(ctx, dec)
	}
}

// onFail returns what decided failed rule i: the local fallback, or its
// policy, closed (an enforcing rule) or open.
func (o *Outcome) onFail(i int) sluice.Outcome {
	switch rule := o.Rules[i]; {
	case o.Local[i]:
		return sluice.OutcomeLocal
	case rule.OnFail == rules.FailClosed && !rule.Shadow:
		return sluice.OutcomeFailedClosed
	default:
		return sluice.OutcomeFailedOpen
	}
}

// onFailNames name what decided a failed rule, in the store-failure log.
var onFailNames = map[sluice.Outcome]string{
	sluice.OutcomeLocal: "local", sluice.OutcomeFailedClosed: "closed", sluice.OutcomeFailedOpen: "open",
}

// logs samples a decider's log records, so that an outage or a flood
// cannot flood the log. Records never name a key or an identity.
type logs struct {
	failures sampler
	refusals sampler
	routing  sampler  // keys run before routing
	charges  sampler  // after-the-fact charges lost
	limits   sampler  // request-set limits capped or ignored
	bypasses sync.Map // bypass entry name -> *sampler
}

// sampler lets at most one log record a second through, counting the ones
// it held back. The zero value is ready to use.
type sampler struct {
	last       atomic.Int64 // Unix nanoseconds of the last record
	suppressed atomic.Int64
}

// allow reports whether a record made at now may be logged, and, when it
// may, how many records were held back since the last one it let through.
func (s *sampler) allow(now time.Time) (ok bool, suppressed int64) {
	last := s.last.Load()
	if now.UnixNano()-last < int64(time.Second) || !s.last.CompareAndSwap(last, now.UnixNano()) {
		s.suppressed.Add(1)
		return false, 0
	}
	return true, s.suppressed.Swap(0)
}

// failure logs, sampled, that the store failed o's request, and what each
// rule it failed was decided by: its on_fail policy, open or closed, or
// the local fallback.
func (l *logs) failure(ctx context.Context, log *slog.Logger, o *Outcome) {
	ok, suppressed := l.failures.allow(time.Now())
	if !ok {
		return
	}
	var decisions []slog.Attr
	for i, rule := range o.Rules {
		if o.Failed[i] {
			decisions = append(decisions, slog.String(headers.SanitizeName(rule.Name), onFailNames[o.onFail(i)]))
		}
	}
	log.LogAttrs(ctx, slog.LevelWarn, "sluice: store failed; rules applied their on_fail policy",
		slog.String("error", o.storeErr.Error()), slog.Attr{Key: "decisions", Value: slog.GroupValue(decisions...)},
		slog.Int64("suppressed", suppressed))
}

// problem logs, sampled with the store failures, a failure no rule
// answers for: a refund that failed, a local fallback that could not
// decide.
func (l *logs) problem(ctx context.Context, log *slog.Logger, err error) {
	if ok, suppressed := l.failures.allow(time.Now()); ok {
		log.LogAttrs(ctx, slog.LevelWarn, "sluice: store failed",
			slog.String("error", err.Error()), slog.Int64("suppressed", suppressed))
	}
}

// refusal logs, sampled, that rules refused a request: the exposed rules
// that refused it, as the rate-limit fields name them.
func (l *logs) refusal(ctx context.Context, log *slog.Logger, o *Outcome) {
	ok, suppressed := l.refusals.allow(time.Now())
	if !ok {
		return
	}
	var policies []string
	for rule := range o.Violated() {
		policies = append(policies, headers.SanitizeName(rule.Name))
	}
	log.LogAttrs(ctx, slog.LevelInfo, "sluice: request refused",
		slog.Any("policies", policies), slog.Duration("retry_after", o.RetryAfter),
		slog.Bool("unsatisfiable", o.Unsatisfiable), slog.Int64("suppressed", suppressed))
}

// bypass logs, sampled per entry, that a bypass entry exempted a request
// from the rules (see rules.Set.WithBypass).
func (l *logs) bypass(ctx context.Context, log *slog.Logger, entry string) {
	v, ok := l.bypasses.Load(entry)
	if !ok {
		v, _ = l.bypasses.LoadOrStore(entry, new(sampler))
	}
	ok, suppressed := v.(*sampler).allow(time.Now())
	if !ok {
		return
	}
	log.LogAttrs(ctx, slog.LevelInfo, "sluice: request exempted from the rate-limit rules by a bypass entry",
		slog.String("bypass", entry), slog.Int64("suppressed", suppressed))
}

// notRouted logs, sampled, that a rule keys on the route pattern before
// routing (err wraps keyfunc.ErrNotRouted and names the rule), with the
// fix. Other key failures are the client's, and not logged.
func (l *logs) notRouted(ctx context.Context, log *slog.Logger, err error) {
	if !errors.Is(err, keyfunc.ErrNotRouted) {
		return
	}
	ok, suppressed := l.routing.allow(time.Now())
	if !ok {
		return
	}
	log.LogAttrs(ctx, slog.LevelWarn, "sluice: a rule keys on the route pattern, which is unknown before routing, so its requests are answered 500; "+
		"key it with chikey.Endpoint(router) or keyfunc.EndpointFromMux(mux), which look the pattern up, or install the limiter after routing (chi's r.With)",
		slog.String("error", err.Error()), slog.Int64("suppressed", suppressed))
}

// chargeLost logs, sampled, that an after-the-fact charge (see
// Outcome.Finish) was lost to a store failure.
func (l *logs) chargeLost(ctx context.Context, log *slog.Logger, n int64, err error) {
	ok, suppressed := l.charges.allow(time.Now())
	if !ok {
		return
	}
	log.LogAttrs(ctx, slog.LevelWarn, "sluice: an after-the-fact charge was lost: the store failed",
		slog.Int64("charge", n), slog.String("error", err.Error()), slog.Int64("suppressed", suppressed))
}
