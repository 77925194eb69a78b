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
	// inproc is the store when it can decide in process (see
	// sluice.LocalStore), tried before a call with a budget; else nil.
	inproc sluice.LocalStore
	// partial is the store when its hits can fail apart (see
	// sluice.PartialTaker), else nil.
	partial sluice.PartialTaker
	logs    logs
	pool    sync.Pool // *Outcome
}

func newDecider(store sluice.Store, cfg config) *Decider {
	if src, ok := store.(sluice.ObserverSource); ok && cfg.observer == nil {
		cfg.observer = src.Observer() // the store's events receiver: metrics in one place
	}
	d := &Decider{store: store, cfg: cfg, local: newLocalFallback(cfg.instances, store)}
	// An in-process store does no I/O: a deadline would bound nothing.
	if ip, ok := store.(sluice.InProcessStore); !ok || !ip.InProcess() {
		d.calls = newCallContexts(cfg.budget)
		d.inproc, _ = store.(sluice.LocalStore)
	}
	d.partial, _ = store.(sluice.PartialTaker)
	d.pool.New = func() any { return &Outcome{dc: d} }
	return d
}

// Check decides r by the rules of set: it resolves the rules r matches
// ([rules.Set.Resolve]; r's context may set its cost, [sluice.WithCost]),
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
	o.Latency, o.storeErr = dc.take(ctx, m.Hits, o.Results)
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
}

// take makes one store call for hits under the latency budget, and
// reports it to an observer that wants store calls
// ([sluice.StoreCallObserver]), with ctx, the request's context, not the
// call's. It tries the store in process first ([sluice.LocalStore]); a
// store whose hits can fail apart ([sluice.PartialTaker]) is called with
// TakePartial, so err may be a [*sluice.PartialError]. It returns the
// call's latency, 0 when no call was made (decided in process, or refused
// from the store's memory).
func (dc *Decider) take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) (time.Duration, error) {
	if dc.inproc != nil && dc.inproc.TakeLocal(hits, out) {
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
	latency := time.Since(start)
	if release != nil {
		release()
	}
	if err == nil && out[0].Remembered {
		return 0, nil // refused from the store's memory: no store call to report
	}
	dc.storeCall(ctx, latency, len(hits), err)
	return latency, err
}

// settle charges n more to the enforcing hits of o, a request over whose
// handler charged it after the fact, in one forced store call. It runs
// after the request, so ctx outlives it (the client may be gone), but
// keeps the budget. A failure is logged, never retried.
func (dc *Decider) settle(ctx context.Context, o *Outcome, n int64) {
	var hits []sluice.Hit // fresh: o's still describe the request
	for _, h := range o.Hits {
		if !h.Shadow {
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
