package decide

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
)

// requestLimits reports the limits a request set for itself
// ([sluice.WithLimit]) that its rules capped or ignored: each to an
// observer that is a [sluice.RequestLimitObserver], and in a log record
// at most once a second.
func (dc *Decider) requestLimits(ctx context.Context, events []sluice.RequestLimitEvent) {
	if o, ok := dc.cfg.observer.(sluice.RequestLimitObserver); ok {
		for _, e := range events {
			o.ObserveRequestLimit(ctx, e)
		}
	}
	ok, suppressed := dc.logs.limits.allow(time.Now())
	if !ok {
		return
	}
	e := events[0]
	attrs := []slog.Attr{
		slog.String("rule", headers.SanitizeName(e.Rule)),
		slog.String("action", e.Action.String()),
		slog.String("requested", e.Requested.String()),
	}
	msg := "sluice: a request's own limit was ignored"
	switch e.Action {
	case sluice.RequestLimitCapped:
		msg = "sluice: a request's own limit is above the rule's max_limit; capped"
		attrs = append(attrs, slog.String("applied", e.Applied.String()))
	case sluice.RequestLimitUnknownRule:
		msg = "sluice: a request set a limit for a rule that no rule set has; ignored"
	case sluice.RequestLimitInvalid:
		msg = "sluice: a request's own limit has another period than its rule's, or is not valid for its algorithm; ignored"
	}
	attrs = append(attrs, slog.Int("events", len(events)), slog.Int64("suppressed", suppressed))
	dc.cfg.logger.LogAttrs(ctx, slog.LevelWarn, msg, attrs...)
}
