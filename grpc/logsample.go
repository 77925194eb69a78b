package sluicegrpc

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// sampler lets at most one record a second through, counting the ones it
// held back, so an outage or a flood cannot flood the log.
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

// failure logs, sampled, that the store failed and how the rules answered.
func (s *sampler) failure(ctx context.Context, log *slog.Logger, err error, closed bool) {
	ok, suppressed := s.allow(time.Now())
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

// denial logs, sampled, that rules refused a call: the method and the
// rules named in the refusal, never the key or the identity.
func (s *sampler) denial(ctx context.Context, log *slog.Logger, d Denial) {
	ok, suppressed := s.allow(time.Now())
	if !ok {
		return
	}
	names := make([]string, len(d.Violations))
	for i, v := range d.Violations {
		names[i] = v.Rule
	}
	log.LogAttrs(ctx, slog.LevelInfo, "sluice: call refused",
		slog.String("method", d.FullMethod), slog.Any("policies", names),
		slog.Duration("retry_after", d.RetryAfter), slog.Bool("unsatisfiable", d.Unsatisfiable),
		slog.Int64("suppressed", suppressed))
}

// bypassLog samples the log records of bypass uses: at most one a second
// per entry.
type bypassLog struct {
	entries sync.Map // entry name -> *sampler
}

// use logs, sampled, that entry exempted a call.
func (b *bypassLog) use(ctx context.Context, log *slog.Logger, entry string) {
	v, ok := b.entries.Load(entry)
	if !ok {
		v, _ = b.entries.LoadOrStore(entry, new(sampler))
	}
	ok, suppressed := v.(*sampler).allow(time.Now())
	if !ok {
		return
	}
	log.LogAttrs(ctx, slog.LevelInfo, "sluice: call exempted from the rate-limit rules by a bypass entry",
		slog.String("bypass", entry), slog.Int64("suppressed", suppressed))
}
