package decide

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/rules"
)

// Decider is the request pipeline: it decides requests by their rules on
// a store and says what the answer is, leaving its form to the front end.
// Create it with [New] (or [NewFrontEnd]). It is safe for concurrent use.
type Decider struct {
	store sluice.Store
	cfg   config
	local *localFallback
	// calls makes the store calls' contexts; nil for an in-process store,
	// whose calls get no deadline.
	calls *callContexts
	// late is how far past its deadline a timed-out call returns when the
	// process, not the store, was slow (see processSlow).
	late time.Duration
	// starved tells whether the process is starved of CPU (see
	// starvation).
	starved starvation
	// inproc is the store when it can decide in process (see
	// sluice.LocalStore), tried before a call with a budget; else nil.
	inproc sluice.LocalStore
	// partial is the store when its hits can fail apart (see
	// sluice.PartialTaker), else nil.
	partial sluice.PartialTaker
	logs    logs
	pool    sync.Pool // *Outcome

	unknownEnd sync.Once // see warnUnknownEnd
}

func newDecider(store sluice.Store, cfg config) *Decider {
	if src, ok := store.(sluice.ObserverSource); ok && cfg.observer == nil {
		cfg.observer = src.Observer() // the store's events receiver: metrics in one place
	}
	// The local fallback keeps the memory store's monotonic clock unless a
	// clock of the caller's own was given: the wall clock can step.
	fallbackClock := cfg.clock
	if fallbackClock == sluice.SystemClock {
		fallbackClock = nil
	}
	d := &Decider{store: store, cfg: cfg, local: newLocalFallback(cfg.instances, store, fallbackClock)}
	// An in-process store does no I/O: a deadline would bound nothing.
	if ip, ok := store.(sluice.InProcessStore); !ok || !ip.InProcess() {
		d.calls = newCallContexts(cfg.budget)
		d.late = lateAfter(cfg.budget)
		d.inproc, _ = store.(sluice.LocalStore)
	}
	d.partial, _ = store.(sluice.PartialTaker)
	d.pool.New = func() any { return &Outcome{dc: d} }
	return d
}

// Check decides r by the rules of set: it resolves the rules r matches
// ([rules.Set.Resolve]; r's context may set its cost, [sluice.WithCost],
// and its limits, [sluice.WithLimit]),
// decides them in one store call under the latency budget, and returns the
// outcome. prior are the policies limiters before this one admitted the
// request under (chained middleware), which the outcome's fields describe
// too, before the request's own; nil for none.
//
// Call the outcome's [Outcome.Finish] when the request is over. Check
// allocates nothing of its own when the store decides every hit and the
// request is admitted, beyond the fields' values.
func (dc *Decider) Check(set *rules.Set, r *http.Request, prior []headers.Policy) *Outcome {
	o := dc.pool.Get().(*Outcome)
	o.Matched = &o.own
	if err := set.Resolve(r, o.Matched); err != nil {
		o.reset(nil)
		o.Verdict = Invalid
		if errors.Is(err, sluice.ErrInvalidHit) {
			o.Err = fmt.Errorf("%w: %w", ErrInvalidCost, err)
		} else {
			o.Err = fmt.Errorf("%w: %w", ErrKeyFailed, err)
			dc.logs.notRouted(r.Context(), dc.cfg.logger, err)
		}
		return o
	}
	if len(o.Matched.LimitEvents) > 0 {
		dc.requestLimits(r.Context(), o.Matched.LimitEvents)
	}
	dc.decide(r.Context(), o, prior)
	return o
}

// Decide decides m, the rules and hits of a request that a front end
// matched itself (the Envoy service matches descriptors, not HTTP
// requests), as [Decider.Check] decides the rules it resolves; ctx is the
// request's context. The outcome refers to m: leave m unchanged until
// [Outcome.Finish].
func (dc *Decider) Decide(ctx context.Context, m *rules.Matched) *Outcome {
	o := dc.pool.Get().(*Outcome)
	o.Matched = m
	dc.decide(ctx, o, nil)
	return o
}

// decide decides o's matched rules into o. A request that matched no rules
// is admitted without a store call.
func (dc *Decider) decide(ctx context.Context, o *Outcome, prior []headers.Policy) {
	o.reset(prior)
	m := o.Matched
	if m.Bypass != "" {
		dc.logs.bypass(ctx, dc.cfg.logger, m.Bypass)
	}
	if len(m.Hits) == 0 {
		return
	}
	if o.inProcessOnly && dc.calls != nil { // see CheckInProcess
		if dc.inproc == nil || !dc.takeLocal(m.Hits, o.Results) {
			o.undecided = true
			return
		}
	} else {
		o.Latency, o.storeErr = dc.take(ctx, m.Hits, o.Results)
	}
	if o.storeErr != nil {
		var pe *sluice.PartialError
		if dc.partial == nil || !errors.As(o.storeErr, &pe) || !o.markFailed(pe) {
			for i := range o.Failed {
				o.Failed[i] = true
			}
		}
		dc.failed(ctx, o)
		o.Err = fmt.Errorf("%w: %w", ErrStoreFailed, o.storeErr)
	} else {
		o.headers = true
		if !sluice.Admitted(m.Hits, o.Results) {
			o.Verdict = Refused
		}
		dc.observe(ctx, o)
	}
	o.conclude()
	if o.Verdict == Refused {
		dc.logs.refusal(ctx, dc.cfg.logger, o)
	}
	dc.holdSlots(ctx, o)
}

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

// take makes one store call for hits under the latency budget, and
// reports it to an observer that wants store calls
// ([sluice.StoreCallObserver]), with ctx, the request's context, not the
// call's. It tries the store in process first ([sluice.LocalStore]); a
// store whose hits can fail apart ([sluice.PartialTaker]) is called with
// TakePartial, so err may be a [*sluice.PartialError]. It returns the
// call's latency, 0 when no call was made (decided in process, or refused
// from the store's memory). A call that succeeds samples the store's
// instance count for the local fallback (see [localFallback.sample]).
func (dc *Decider) take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) (time.Duration, error) {
	if dc.inproc != nil && dc.takeLocal(hits, out) {
		return 0, nil // decided in process: no store call to report
	}
	call, release := dc.callContext(ctx)
	start := time.Now()
	var err error
	if dc.partial != nil {
		err = dc.partial.TakePartial(call, hits, out)
	} else {
		err = dc.store.Take(call, hits, out)
	}
	end := time.Now()
	latency := end.Sub(start)
	if dc.calls != nil {
		err = dc.starved.check(err, out, call, latency, end, dc.late)
	}
	if release != nil {
		release()
	}
	if err == nil {
		dc.local.sample(end.UnixNano())
	}
	if err == nil && out[0].Remembered {
		return 0, nil // refused from the store's memory: no store call to report
	}
	dc.storeCall(ctx, latency, len(hits), err)
	return latency, err
}

// takeLocal decides hits in process when the store can
// ([sluice.LocalStore]) and reports whether it did. An answer from the
// store's memory of refusals yields while the process is starved (see
// [starvation]), as a store call answered that way does.
func (dc *Decider) takeLocal(hits []sluice.Hit, out []sluice.Result) bool {
	if !dc.inproc.TakeLocal(hits, out) {
		return false
	}
	if out[0].Remembered {
		dc.starved.yield()
	}
	return true
}

// settle charges n more to the enforcing hits of o, a request over whose
// handler charged it after the fact, in one forced store call, but for
// the rules counting by outcome that do not count its end. It runs
// after the request, so ctx outlives it (the client may be gone), but
// keeps the budget. A failure is logged, never retried.
func (dc *Decider) settle(ctx context.Context, o *Outcome, n int64) {
	var hits []sluice.Hit // fresh: o's still describe the request
	for i, h := range o.Hits {
		if !h.Shadow && !h.Concurrency && !o.uncounted(i) { // a slot is not charged
			h.Cost, h.Force, h.Peek, h.MinCost = n, true, false, 0
			hits = append(hits, h)
		}
	}
	if len(hits) == 0 {
		return
	}
	if _, err := dc.take(ctx, hits, make([]sluice.Result, len(hits))); err != nil {
		dc.logs.chargeLost(ctx, dc.cfg.logger, n, err)
	}
}

// callContext returns the context of a store call made now for a request
// whose context is ctx, and the function to call when the call returns,
// or nil.
func (dc *Decider) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if dc.calls == nil {
		return ctx, nil
	}
	return dc.calls.with(ctx)
}

// storeCall reports a store call to an observer that wants them.
func (dc *Decider) storeCall(ctx context.Context, latency time.Duration, hits int, err error) {
	if o, ok := dc.cfg.observer.(sluice.StoreCallObserver); ok {
		o.ObserveStoreCall(ctx, sluice.StoreCall{Latency: latency, Hits: hits, Err: err})
	}
}
