package sluice

import (
	"context"
	"reflect"
)

// Observers returns an [Observer] that forwards every decision, every
// store call (see [StoreCallObserver]) and every capped or ignored
// request-set limit (see [RequestLimitObserver]) to each of obs in turn: metrics and
// a custom sink side by side. nil observers are skipped, and so is an
// observer given again (directly or within another Observers): a collector
// named twice counts each decision once.
func Observers(obs ...Observer) Observer {
	var m multiObserver
	for _, o := range obs {
		m = m.add(o)
	}
	return m
}

type multiObserver []Observer

// add returns m with o, unless o is nil or m has it already; the
// observers of a multiObserver are added one by one.
func (m multiObserver) add(o Observer) multiObserver {
	switch o := o.(type) {
	case nil:
		return m
	case multiObserver:
		for _, inner := range o {
			m = m.add(inner)
		}
		return m
	}
	for _, have := range m {
		if sameObserver(have, o) {
			return m
		}
	}
	return append(m, o)
}

// sameObserver reports whether a and b are one observer: equal values of
// one comparable type (such as the same pointer). Values that cannot be
// compared (a function, a slice) are never the same.
func sameObserver(a, b Observer) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Type() == vb.Type() && va.Comparable() && vb.Comparable() && a == b
}

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

// ObserveRequestLimit forwards e to every observer that wants request-set
// limits (see [RequestLimitObserver]).
func (m multiObserver) ObserveRequestLimit(ctx context.Context, e RequestLimitEvent) {
	for _, o := range m {
		if rl, ok := o.(RequestLimitObserver); ok {
			rl.ObserveRequestLimit(ctx, e)
		}
	}
}
