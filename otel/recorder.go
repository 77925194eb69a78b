package sluiceotel

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/obs"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ScopeName is the instrumentation scope of the recorder's meter.
const ScopeName = "github.com/sluicehq/sluice/otel"

// The attribute keys of the recorder's instruments.
const (
	keyRule      = attribute.Key("sluice.rule")
	keyOutcome   = attribute.Key("sluice.outcome")
	keyErrorType = attribute.Key("error.type")
	keyAmbiguous = attribute.Key("sluice.store.ambiguous")
	keyEndpoint  = attribute.Key("sluice.store.endpoint")
	keyState     = attribute.Key("sluice.breaker.state")
	keyFrom      = attribute.Key("sluice.breaker.from")
	keyTo        = attribute.Key("sluice.breaker.to")
	keyPolicy    = attribute.Key("sluice.store.eviction_policy")
	keyHandling  = attribute.Key("sluice.hot_key.handling")
	keyHotKeyTo  = attribute.Key("sluice.hot_key.state")
	keyAction    = attribute.Key("sluice.request_limit.action")
)

// Recorder records sluice's decisions, store calls, store events and
// lease events as OpenTelemetry instruments (see the package
// documentation for the list). Attach it where the metrics package's
// Collector would go: it implements [sluice.Observer],
// [sluice.StoreCallObserver], [sluice.ResetObserver],
// [sluice.RequestLimitObserver], [sluice.StoreEvents], [sluice.BreakerStartedEvents],
// [sluice.StateHealedEvents],
// [sluice.EvictionPolicyEvents], the memory store's Events and the lease
// store's Observer and RefundObserver. Create it with [New]. It is safe
// for concurrent use.
type Recorder struct {
	cfg  config
	base []attribute.KeyValue // WithAttributes

	decisions      metric.Int64Counter
	remembered     metric.Int64Counter
	penalties      metric.Int64Counter
	latency        metric.Float64Histogram
	storeErrors    metric.Int64Counter
	breaker        metric.Int64Gauge
	breakers       sync.Map // endpoint → struct{}: the endpoints sluice.breaker.state has points of
	transitions    metric.Int64Counter
	reloads        metric.Int64Counter
	heals          metric.Int64Counter
	evicting       metric.Int64Gauge
	evictions      metric.Int64Counter
	resets         metric.Int64Counter
	reqLimits      metric.Int64Counter
	refills        metric.Int64Counter
	refilled       metric.Int64Counter
	returned       metric.Int64Counter
	lost           metric.Int64Counter
	refundFailures metric.Int64Counter
	leasedKeys     metric.Int64Gauge
	hotKeys        metric.Int64UpDownCounter
	hotTransitions metric.Int64Counter

	// rules holds the attributes of each rule name, up to the cap; the
	// hot path reads it without locking.
	rules *obs.Names[*ruleAttrs]

	latencyOK  []metric.RecordOption
	latencyErr [obs.NumKinds][]metric.RecordOption
	errOpts    [obs.NumKinds][2][]metric.AddOption // [kind][ambiguous]
	baseAdd    []metric.AddOption
	baseRecord []metric.RecordOption
}

// ruleAttrs are the measurement options of one sluice.rule value.
type ruleAttrs struct {
	label    string
	outcomes [][]metric.AddOption // by sluice.Outcome
	unknown  []metric.AddOption   // an outcome out of range
	rule     []metric.AddOption   // sluice.rule alone
	limits   [][]metric.AddOption // sluice.rule and sluice.request_limit.action, by action
}

// New returns a recorder whose instruments come from mp's meter of scope
// [ScopeName]. A nil provider, an invalid option, or an instrument the
// provider refuses is an error; the first two wrap
// [sluice.ErrInvalidConfig].
func New(mp metric.MeterProvider, opts ...Option) (*Recorder, error) {
	if mp == nil {
		return nil, invalidConfig("New: nil meter provider")
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	r := &Recorder{cfg: cfg, base: cfg.attrs}
	if err := r.instruments(mp.Meter(ScopeName)); err != nil {
		return nil, fmt.Errorf("sluiceotel: %w", err)
	}
	r.latencyOK = []metric.RecordOption{r.set()}
	for k := range obs.NumKinds {
		r.latencyErr[k] = []metric.RecordOption{r.set(keyErrorType.String(kindLabels[k]))}
		for a := range 2 {
			r.errOpts[k][a] = []metric.AddOption{r.set(keyErrorType.String(kindLabels[k]), keyAmbiguous.Bool(a == 1))}
		}
	}
	r.baseAdd = []metric.AddOption{r.set()}
	r.baseRecord = []metric.RecordOption{r.set()}
	r.rules = obs.NewNames(r.cfg.maxRules, OtherRule, r.newRuleAttrs)
	return r, nil
}

// set returns the measurement option of the base attributes and kvs.
func (r *Recorder) set(kvs ...attribute.KeyValue) metric.MeasurementOption {
	all := make([]attribute.KeyValue, 0, len(r.base)+len(kvs))
	all = append(all, r.base...)
	all = append(all, kvs...)
	return metric.WithAttributeSet(attribute.NewSet(all...))
}

// instruments creates the recorder's instruments on m.
func (r *Recorder) instruments(m metric.Meter) error {
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	gauge := func(name, unit, desc string) metric.Int64Gauge {
		g, err := m.Int64Gauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return g
	}
	r.decisions = counter("sluice.decisions", "{decision}", "Rate-limit decisions, one per rule per request, by rule and outcome.")
	r.remembered = counter("sluice.refusals.remembered", "{refusal}", "Denials a store answered in process from its memory of an earlier refusal, with no store call, by rule.")
	r.penalties = counter("sluice.penalties.started", "{block}", "Blocks a rule's penalty started (identities refused for the penalty's block), by rule.")
	var err error
	r.latency, err = m.Float64Histogram("sluice.store.call.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of store calls, one per request; error.type is set on failed calls."),
		metric.WithExplicitBucketBoundaries(r.cfg.buckets...))
	errs = append(errs, err)
	r.storeErrors = counter("sluice.store.errors", "{error}", "Failed store calls, by error type and whether the call may have been applied.")
	r.breaker = gauge("sluice.breaker.state", "1", "Circuit breaker state of a store endpoint: 1 for its current state, 0 for the others.")
	r.transitions = counter("sluice.breaker.transitions", "{transition}", "Circuit breaker state changes of a store endpoint.")
	r.reloads = counter("sluice.store.script.reloads", "{reload}", "Times a store endpoint had lost the limiter script and it was loaded again.")
	r.heals = counter("sluice.store.heals", "{key}", "Bucket keys of a store endpoint found holding something that is not a bucket's state, and replaced.")
	r.evicting = gauge("sluice.store.evicting", "1", "1 when a store endpoint's eviction policy can evict rate-limit keys, 0 when it cannot, -1 when the endpoint refuses to tell.")
	r.evictions = counter("sluice.memstore.evictions", "{bucket}", "Buckets the in-process store evicted, full, to make room for new ones.")
	r.resets = counter("sluice.resets", "{bucket}", "Buckets an operator reset, by rule.")
	r.reqLimits = counter("sluice.request_limits", "{limit}", "Limits requests set for themselves (sluice.WithLimit) that a rule capped or ignored, by rule as the request named it and action.")
	r.refills = counter("sluice.lease.refills", "{refill}", "Calls to the shared store that took a local lease.")
	r.refilled = counter("sluice.lease.tokens.refilled", "{token}", "Tokens taken by lease refills.")
	r.returned = counter("sluice.lease.tokens.returned", "{token}", "Unused lease tokens given back to the shared store.")
	r.lost = counter("sluice.lease.tokens.lost", "{token}", "Unused lease tokens that did not go back.")
	r.refundFailures = counter("sluice.lease.refund_failures", "{refund}", "Refunds the shared store failed to take, never retried.")
	r.leasedKeys = gauge("sluice.lease.keys", "{key}", "Keys holding lease state, after each sweep.")
	r.hotKeys, err = m.Int64UpDownCounter("sluice.hot_keys", metric.WithUnit("{key}"), metric.WithDescription("Keys hot right now, by rule."))
	errs = append(errs, err)
	r.hotTransitions = counter("sluice.hot_key.transitions", "{transition}", "Keys turning hot or cooling, by how the rule handles them.")
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Observe records d in sluice.decisions under its rule and outcome, a
// denial a store answered from memory ([sluice.Result.Remembered]) in
// sluice.refusals.remembered too, and a blocked refusal that started its
// rule's penalty ([sluice.Result.BlockStarted]) in
// sluice.penalties.started. When ctx carries a recording span and d
// refused the request (denied, failed closed, or denied by the local
// fallback), it adds the span event sluice.refused, with sluice.rule,
// sluice.outcome and, when the request can pass later,
// sluice.retry_after (seconds); see [WithoutSpanEvents]. It implements
// [sluice.Observer]. After a rule's first decision it takes no lock.
func (r *Recorder) Observe(ctx context.Context, d sluice.Decision) {
	ra := r.rule(d.Rule)
	if int(d.Outcome) >= len(ra.outcomes) {
		r.decisions.Add(ctx, 1, ra.unknown...)
		return
	}
	r.decisions.Add(ctx, 1, ra.outcomes[d.Outcome]...)
	if d.Result.Remembered && (d.Outcome == sluice.OutcomeDenied || d.Outcome == sluice.OutcomeBlocked) {
		r.remembered.Add(ctx, 1, ra.rule...)
	}
	if d.Result.BlockStarted && d.Outcome == sluice.OutcomeBlocked {
		r.penalties.Add(ctx, 1, ra.rule...)
	}
	if r.cfg.spanEvents && refused(d) {
		spanEvent(ctx, ra.label, d)
	}
}

// refused reports whether d refused its request.
func refused(d sluice.Decision) bool {
	switch d.Outcome {
	case sluice.OutcomeDenied, sluice.OutcomeBlocked, sluice.OutcomeFailedClosed:
		return true
	case sluice.OutcomeLocal:
		return !d.Shadow && !d.Result.Allowed
	}
	return false
}

// rule returns the attributes of rule name: its own while the table has
// room, else OtherRule's.
func (r *Recorder) rule(name string) *ruleAttrs { return r.rules.Get(name) }

// newRuleAttrs builds the measurement options of a rule name.
func (r *Recorder) newRuleAttrs(name string) *ruleAttrs {
	label := strings.ToValidUTF8(name, "\uFFFD")
	ra := &ruleAttrs{label: label, outcomes: make([][]metric.AddOption, len(obs.OutcomeLabels))}
	for i, o := range obs.OutcomeLabels {
		ra.outcomes[i] = []metric.AddOption{r.set(keyRule.String(label), keyOutcome.String(o))}
	}
	ra.unknown = []metric.AddOption{r.set(keyRule.String(label), keyOutcome.String("unknown"))}
	ra.rule = []metric.AddOption{r.set(keyRule.String(label))}
	for a := sluice.RequestLimitAction(0); a.String() != "unknown"; a++ {
		ra.limits = append(ra.limits, []metric.AddOption{r.set(keyRule.String(label), keyAction.String(a.String()))})
	}
	return ra
}

// ObserveStoreCall records c's latency in sluice.store.call.duration
// (with error.type for a failed call) and counts a failed call in
// sluice.store.errors. It implements [sluice.StoreCallObserver].
func (r *Recorder) ObserveStoreCall(ctx context.Context, c sluice.StoreCall) {
	secs := c.Latency.Seconds()
	if c.Err == nil {
		r.latency.Record(ctx, secs, r.latencyOK...)
		return
	}
	k, ambiguous := obs.Classify(c.Err)
	r.latency.Record(ctx, secs, r.latencyErr[k]...)
	a := 0
	if ambiguous {
		a = 1
	}
	r.storeErrors.Add(ctx, 1, r.errOpts[k][a]...)
}

// ObserveReset counts a bucket an operator reset in sluice.resets under
// rule. It implements [sluice.ResetObserver].
func (r *Recorder) ObserveReset(ctx context.Context, rule string) {
	r.resets.Add(ctx, 1, r.rule(rule).rule...)
}

// ObserveRequestLimit counts a limit a request set for itself that a rule
// capped or ignored in sluice.request_limits, under the rule name the
// request gave and the action. It implements [sluice.RequestLimitObserver].
func (r *Recorder) ObserveRequestLimit(ctx context.Context, e sluice.RequestLimitEvent) {
	if ra := r.rule(e.Rule); int(e.Action) < len(ra.limits) {
		r.reqLimits.Add(ctx, 1, ra.limits[e.Action]...)
	}
}

// The interfaces of the root package a Recorder implements: every sink's,
// and resets.
var (
	_ obs.Sink             = (*Recorder)(nil)
	_ sluice.ResetObserver = (*Recorder)(nil)
)
