package admin

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice"
)

// setPeriod writes into b the bounds of l's current calendar period at
// now, for a calendar limit.
func setPeriod(b *Bucket, l sluice.Limit, now time.Time) {
	if l.Calendar == sluice.NoCalendar {
		return
	}
	start, end := l.Window(now)
	loc := l.Location()
	b.PeriodStart, b.PeriodEnd = start.In(loc).Format(time.RFC3339), end.In(loc).Format(time.RFC3339)
}

// WithClock sets the clock that places a calendar limit's current period
// in /inspect's answer (period_start, period_end). Default: the system
// clock; tests pass the fake clock their store decides by. A nil clock is
// an error wrapping [sluice.ErrInvalidConfig].
func WithClock(c sluice.Clock) Option {
	return optionFunc(func(cfg *config) error {
		if c == nil {
			return fmt.Errorf("%w: admin: WithClock: nil clock", sluice.ErrInvalidConfig)
		}
		cfg.clock = c
		return nil
	})
}

// now reads the handler's clock.
func (h *handler) now() time.Time {
	if h.clock == nil {
		return time.Now()
	}
	return h.clock.Now()
}
