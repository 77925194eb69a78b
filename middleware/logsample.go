package middleware

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/decide"
)

// logChargeLost logs, sampled by s, that an after-the-fact charge (see
// Charge) was lost to a store failure.
func logChargeLost(ctx context.Context, s *decide.Sampler, log *slog.Logger, n int64, err error) {
	ok, suppressed := s.Allow(time.Now())
	if !ok {
		return
	}
	log.LogAttrs(ctx, slog.LevelWarn, "sluice: an after-the-fact charge was lost: the store failed",
		slog.Int64("charge", n), slog.String("error", err.Error()), slog.Int64("suppressed", suppressed))
}

// logNotRouted logs, sampled by s, that a rule keys on the route pattern
// before routing (err wraps keyfunc.ErrNotRouted and names the rule), with
// the fix.
func logNotRouted(ctx context.Context, s *decide.Sampler, log *slog.Logger, err error) {
	ok, suppressed := s.Allow(time.Now())
	if !ok {
		return
	}
	log.LogAttrs(ctx, slog.LevelWarn, "sluice: a rule keys on the route pattern, which is unknown before routing, so its requests are answered 500; "+
		"key it with chikey.Endpoint(router) or keyfunc.EndpointFromMux(mux), which look the pattern up, or install the limiter after routing (chi's r.With)",
		slog.String("error", err.Error()), slog.Int64("suppressed", suppressed))
}
