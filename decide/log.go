package decide

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/headers"
)

// logs samples a decider's log records, so that an outage or a flood
// cannot flood the log. Records never name a key or an identity.
type logs struct {
	failures Sampler
	refusals Sampler
	bypasses sync.Map // bypass entry name -> *Sampler
}

// Sampler lets at most one log record a second through, counting the ones
// it held back, so that an outage or a flood cannot flood the log. A
// decider samples its own records with one per kind; protocol layers use
// it for theirs. The zero value is ready to use. It is safe for
// concurrent use.
type Sampler struct {
	last       atomic.Int64 // Unix nanoseconds of the last record
	suppressed atomic.Int64
}

// Allow reports whether a record made at now may be logged, and, when it
// may, how many records were held back since the last one it let through.
func (s *Sampler) Allow(now time.Time) (ok bool, suppressed int64) {
	last := s.last.Load()
	if now.UnixNano()-last < int64(time.Second) || !s.last.CompareAndSwap(last, now.UnixNano()) {
		s.suppressed.Add(1)
		return false, 0
	}
	return true, s.suppressed.Swap(0)
}

// failure logs, sampled, that the store failed and whether a closed rule
// refused the request.
func (l *logs) failure(ctx context.Context, log *slog.Logger, err error, closed bool) {
	ok, suppressed := l.failures.Allow(time.Now())
	if !ok {
		return
	}
	policy := "open"
	if closed {
		policy = "closed"
	}
	log.LogAttrs(ctx, slog.LevelWarn, "sluice: store failed; rules applied their on_fail policy",
		slog.String("error", err.Error()), slog.String("decision", policy),
		slog.Int64("suppressed", suppressed))
}

// refusal logs, sampled, that rules refused a request: the exposed rules
// that refused it, as the rate-limit headers name them.
func (l *logs) refusal(ctx context.Context, log *slog.Logger, d *Decision) {
	ok, suppressed := l.refusals.Allow(time.Now())
	if !ok {
		return
	}
	var policies []string
	for i, rule := range d.m.Rules {
		if d.Refusing(i) && rule.Exposed() {
			policies = append(policies, headers.SanitizeName(rule.Name))
		}
	}
	retry, unsatisfiable := d.RetryAfter(), d.Unsatisfiable()
	if unsatisfiable {
		retry = 0
	}
	log.LogAttrs(ctx, slog.LevelInfo, "sluice: request refused",
		slog.Any("policies", policies), slog.Duration("retry_after", retry),
		slog.Bool("unsatisfiable", unsatisfiable), slog.Int64("suppressed", suppressed))
}

// bypass logs, sampled per entry, that a bypass entry exempted a request
// from the rules (see rules.Set.WithBypass).
func (l *logs) bypass(ctx context.Context, log *slog.Logger, entry string) {
	v, ok := l.bypasses.Load(entry)
	if !ok {
		v, _ = l.bypasses.LoadOrStore(entry, new(Sampler))
	}
	ok, suppressed := v.(*Sampler).Allow(time.Now())
	if !ok {
		return
	}
	log.LogAttrs(ctx, slog.LevelInfo, "sluice: request exempted from the rate-limit rules by a bypass entry",
		slog.String("bypass", entry), slog.Int64("suppressed", suppressed))
}
