package sluice

import "context"

// Observers returns an [Observer] that forwards every decision, and every
// store call (see [StoreCallObserver]), to each of obs in turn: metrics and
// a custom sink side by side. nil observers are skipped.
func Observers(obs ...Observer) Observer {
	var m multiObserver
	for _, o := range obs {
		if o != nil {
			m = append(m, o)
		}
	}
	return m
}

type multiObserver []Observer

// Observe forwards d to every observer.
func (m multiObserver) Observe(ctx context.Context, d Decision) {
	for _, o := range m {
		o.Observe(ctx, d)
	}
}

// ObserveStoreCall forwards c to every observer that wants store calls.
func (m multiObserver) ObserveStoreCall(ctx context.Context, c StoreCall) {
	for _, o := range m {
		if sc, ok := o.(StoreCallObserver); ok {
			sc.ObserveStoreCall(ctx, c)
		}
	}
}
