package middleware

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// sampler lets at most one record a second through, counting the ones it
// held back, so an outage cannot flood the log.
type sampler struct {
	last       atomic.Int64 // Unix nanoseconds of the last record
	suppressed atomic.Int64
}

func (s *sampler) allow(now time.Time) (ok bool, suppressed int64) {
	last := s.last.Load()
	if now.UnixNano()-last < int64(time.Second) || !s.last.CompareAndSwap(last, now.UnixNano()) {
		s.suppressed.Add(1)
		return false, 0
	}
	return true, s.suppressed.Swap(0)
}

// chargeLost logs, sampled, that an after-the-fact charge (see Charge)
// was lost to a store failure.
func (s *sampler) chargeLost(ctx context.Context, log *slog.Logger, n int64, err error) {
	ok, suppressed := s.allow(time.Now())
	if !ok {
		return
	}
	log.LogAttrs(ctx, slog.LevelWarn, "sluice: an after-the-fact charge was lost: the store failed",
		slog.Int64("charge", n), slog.String("error", err.Error()), slog.Int64("suppressed", suppressed))
}

// notRouted logs, sampled, that a rule keys on the route pattern before
// routing (err wraps keyfunc.ErrNotRouted and names the rule), with the fix.
func (s *sampler) notRouted(ctx context.Context, log *slog.Logger, err error) {
	ok, suppressed := s.allow(time.Now())
	if !ok {
		return
	}
	log.LogAttrs(ctx, slog.LevelWarn, "sluice: a rule keys on the route pattern, which is unknown before routing, so its requests are answered 500; "+
		"key it with chikey.Endpoint(router) or keyfunc.EndpointFromMux(mux), which look the pattern up, or install the limiter after routing (chi's r.With)",
		slog.String("error", err.Error()), slog.Int64("suppressed", suppressed))
}
