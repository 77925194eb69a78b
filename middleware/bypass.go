package middleware

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/rules"
)

// A request a bypass entry exempts (see rules.Set.WithBypass) is decided by
// that entry's limit alone. Every such request is reported to the observer:
// as sluice.OutcomeBypassed when the entry's limit let it through, as a
// denial or a failure otherwise, always under the entry's name. Every use is
// logged too, sampled per entry, so that a flood of exempt requests cannot
// flood the log. Neither names the identity (an address, an API key) the
// entry matched.

// bypassLog samples the log records of bypass uses: at most one a second
// per entry, carrying the number of uses held back since the last record.
type bypassLog struct {
	entries sync.Map // entry name -> *sampler
}

// use logs, sampled, that entry exempted a request.
func (b *bypassLog) use(ctx context.Context, log *slog.Logger, entry string) {
	v, ok := b.entries.Load(entry)
	if !ok {
		v, _ = b.entries.LoadOrStore(entry, new(sampler))
	}
	ok, suppressed := v.(*sampler).allow(time.Now())
	if !ok {
		return
	}
	log.LogAttrs(ctx, slog.LevelInfo, "sluice: request exempted from the rate-limit rules by a bypass entry",
		slog.String("bypass", entry), slog.Int64("suppressed", suppressed))
}

// bypassOutcome is the outcome the observer receives for a rule of m:
// OutcomeBypassed for a bypass entry's limit that let the request through.
func bypassOutcome(m *rules.Matched, o sluice.Outcome) sluice.Outcome {
	if m.Bypass != "" && o == sluice.OutcomeAllowed {
		return sluice.OutcomeBypassed
	}
	return o
}
