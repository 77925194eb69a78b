package decide

import (
	"context"
	"errors"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/rules"
)

// Decider decides requests' matched rules on a store. Create it with
// [New]. It is safe for concurrent use.
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
}

// New returns a decider on store. A nil store, or an invalid option, is a
// [*ConfigError] wrapping [sluice.ErrInvalidConfig].
func New(store sluice.Store, opts ...Option) (*Decider, error) {
	if store == nil {
		return nil, invalidConfig("New: nil store")
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
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
	return d, nil
}

// Decide decides the hits of m, one request's matched rules as
// [rules.Set.Resolve] finds them, in one store call, and writes the
// decision to d, reusing d's slices. ctx is the request's context. d
// refers to m: leave m unchanged while d is in use.
//
// A request that matched no rules is admitted without a store call.
// Decide itself allocates nothing when the store decides every hit and
// the request is admitted.
func (dc *Decider) Decide(ctx context.Context, m *rules.Matched, d *Decision) {
	d.reset(m)
	if m.Bypass != "" {
		dc.logs.bypass(ctx, dc.cfg.logger, m.Bypass)
	}
	if len(m.Hits) == 0 {
		return
	}
	d.Latency, d.Err = dc.Take(ctx, m.Hits, d.Results)
	if d.Err != nil {
		var pe *sluice.PartialError
		if dc.partial == nil || !errors.As(d.Err, &pe) || !d.markFailed(pe) {
			for i := range d.Failed {
				d.Failed[i] = true
			}
		}
		dc.failed(ctx, d)
	} else {
		d.headers = true
		if !sluice.Admitted(m.Hits, d.Results) {
			d.Verdict = Refused
		}
		dc.observe(ctx, d)
	}
	if d.Verdict == Refused {
		dc.logs.refusal(ctx, dc.cfg.logger, d)
	}
}

// Take makes one store call for hits under the latency budget, and
// reports it to an observer that wants store calls
// ([sluice.StoreCallObserver]), with ctx, the request's context, not the
// call's. It tries the store in process first ([sluice.LocalStore]); a
// store whose hits can fail apart ([sluice.PartialTaker]) is called with
// TakePartial, so err may be a [*sluice.PartialError]. It returns the
// call's latency, 0 when no call was made (decided in process, or refused
// from the store's memory).
func (dc *Decider) Take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) (time.Duration, error) {
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
