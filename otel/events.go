package sluiceotel

import (
	"context"
	"strings"

	"github.com/sluicehq/sluice"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Store events carry no context: they are recorded with
// context.Background().

// endpoint returns the attribute of a store endpoint.
func endpoint(e string) attribute.KeyValue {
	return keyEndpoint.String(strings.ToValidUTF8(e, "\uFFFD"))
}

// breakerStates are the states sluice.breaker.state reports, each 1 when
// current and 0 otherwise.
var breakerStates = []sluice.BreakerState{sluice.BreakerClosed, sluice.BreakerOpen, sluice.BreakerHalfOpen}

// BreakerChanged records endpoint's breaker state in sluice.breaker.state
// (1 for to, 0 for the other states) and counts the change in
// sluice.breaker.transitions. It implements [sluice.StoreEvents].
func (r *Recorder) BreakerChanged(e string, from, to sluice.BreakerState) {
	r.breakers.Store(e, struct{}{})
	ep := endpoint(e)
	r.breakerState(ep, to)
	r.transitions.Add(context.Background(), 1, r.set(ep, keyFrom.String(from.String()), keyTo.String(to.String())))
}

// BreakerStarted records endpoint's breaker as closed in
// sluice.breaker.state when it has no state recorded yet: a breaker is
// shown from its start, not from its first transition. It implements
// [sluice.BreakerStartedEvents].
func (r *Recorder) BreakerStarted(e string) {
	if _, seen := r.breakers.LoadOrStore(e, struct{}{}); !seen {
		r.breakerState(endpoint(e), sluice.BreakerClosed)
	}
}

// breakerState records sluice.breaker.state of endpoint ep: 1 for state,
// 0 for the others.
func (r *Recorder) breakerState(ep attribute.KeyValue, state sluice.BreakerState) {
	ctx := context.Background()
	for _, s := range breakerStates {
		v := int64(0)
		if s == state {
			v = 1
		}
		r.breaker.Record(ctx, v, r.set(ep, keyState.String(s.String())))
	}
}

// ScriptReloaded counts a script reload of endpoint in
// sluice.store.script.reloads. It implements [sluice.StoreEvents].
func (r *Recorder) ScriptReloaded(e string) {
	r.reloads.Add(context.Background(), 1, r.set(endpoint(e)))
}

// StateHealed counts a bucket key of endpoint replaced because it held
// something that is not a bucket's state, in sluice.store.heals. It
// implements [sluice.StateHealedEvents].
func (r *Recorder) StateHealed(e string) {
	r.heals.Add(context.Background(), 1, r.set(endpoint(e)))
}

// EvictionPolicyChecked records sluice.store.evicting for endpoint: 1
// when its policy can evict the store's keys, 0 when it cannot, -1 when
// the policy is unknown (empty: the server refused to tell), with the
// policy as sluice.store.eviction_policy ("unknown" when empty). It
// implements [sluice.EvictionPolicyEvents].
func (r *Recorder) EvictionPolicyChecked(e, policy string, evicting bool) {
	v := int64(0)
	switch {
	case evicting:
		v = 1
	case policy == "":
		v = -1
	}
	if policy == "" {
		policy = "unknown"
	}
	r.evicting.Record(context.Background(), v, r.set(endpoint(e), keyPolicy.String(strings.ToValidUTF8(policy, "\uFFFD"))))
}

// BucketsEvicted counts n evictions of the in-process store in
// sluice.memstore.evictions. It implements memstore.Events: give the
// recorder to memstore.Config's Events field.
func (r *Recorder) BucketsEvicted(n int) {
	if n > 0 {
		r.evictions.Add(context.Background(), int64(n), r.baseAdd...)
	}
}

// LeaseRefilled counts a refill in sluice.lease.refills and the tokens it
// took in sluice.lease.tokens.refilled. It implements lease.Observer:
// give the recorder to lease.Config's Observer field.
func (r *Recorder) LeaseRefilled(rule string, taken int64) {
	ctx := context.Background()
	opts := r.rule(rule).rule
	r.refills.Add(ctx, 1, opts...)
	r.refilled.Add(ctx, taken, opts...)
}

// LeaseReturned counts unused tokens given back, in
// sluice.lease.tokens.returned. It implements lease.Observer.
func (r *Recorder) LeaseReturned(rule string, units int64) {
	r.returned.Add(context.Background(), units, r.rule(rule).rule...)
}

// LeaseLost counts unused tokens that did not go back, in
// sluice.lease.tokens.lost. It implements lease.Observer.
func (r *Recorder) LeaseLost(rule string, units int64) {
	r.lost.Add(context.Background(), units, r.rule(rule).rule...)
}

// RefundFailed counts refunds the shared store failed to take, in
// sluice.lease.refund_failures. It implements lease.RefundObserver.
func (r *Recorder) RefundFailed(rule string, refunds int) {
	r.refundFailures.Add(context.Background(), int64(refunds), r.rule(rule).rule...)
}

// LeasedKeys records the keys holding lease state in sluice.lease.keys.
// It implements lease.Observer.
func (r *Recorder) LeasedKeys(n int) {
	r.leasedKeys.Record(context.Background(), int64(n), r.baseRecord...)
}

// HotKey counts a key turning hot or cooling in
// sluice.hot_key.transitions (sluice.hot_key.state "hot" or "cold",
// sluice.hot_key.handling "lease", "split", "lease+split" or "none") and
// keeps sluice.hot_keys. It implements lease.Observer.
func (r *Recorder) HotKey(rule string, hot bool, handling string) {
	ctx := context.Background()
	ra := r.rule(rule)
	to, delta := "cold", int64(-1)
	if hot {
		to, delta = "hot", 1
	}
	r.hotKeys.Add(ctx, delta, ra.rule...)
	r.hotTransitions.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(append(r.base[:len(r.base):len(r.base)],
		keyRule.String(ra.label), keyHandling.String(strings.ToValidUTF8(handling, "\uFFFD")), keyHotKeyTo.String(to))...)))
}
