package sluice

import (
	"fmt"
	"math/bits"
	"strconv"
	"time"
)

// MaxSpan is the longest time, in microseconds, a limit may take to refill
// from empty to full (Burst × emission interval): 2^50 µs, about 35 years.
// It keeps every intermediate value of the integer arithmetic below 2^53, so
// Lua's double-precision numbers compute exactly what Go computes.
const MaxSpan = int64(1) << 50

// Limit is a rate: Rate events per Period, with a capacity of Burst; or,
// for a calendar limit, Rate events per calendar period of a time zone.
//
// The zero value is not a valid limit; build one with [Per], [PerSecond],
// [PerMinute] or [PerHour], then [Limit.WithBurst], or with [PerCalendar].
// A Limit is a plain value, safe to copy and to share.
type Limit struct {
	// Rate is how many events are allowed per Period. Must be at least 1.
	Rate int64
	// Period is the time Rate refers to. At least 1 ms, a whole number of
	// microseconds, and no shorter than Rate microseconds (at most one event
	// per microsecond).
	Period time.Duration
	// Burst is the capacity: how many events may pass at once after a quiet
	// spell. 0 means Rate.
	Burst int64
	// Calendar, when set, makes this a calendar limit: Rate per period
	// of the calendar in Zone (an hour, a day, a week, a month), counted
	// as a [FixedWindow] aligned to the zone's boundaries; Period then
	// holds the calendar's nominal length ([Calendar.Nominal]) and Burst
	// is 0. Build one with [PerCalendar]. The zero value, NoCalendar, is
	// a limit per Period.
	Calendar Calendar
	// Zone is the time zone of a calendar limit's periods; nil means UTC.
	// Ignored without a Calendar.
	Zone *time.Location
}

// Per returns a limit of rate events per period, with a burst of rate.
func Per(rate int64, period time.Duration) Limit { return Limit{Rate: rate, Period: period} }

// PerSecond returns a limit of rate events per second.
func PerSecond(rate int64) Limit { return Per(rate, time.Second) }

// PerMinute returns a limit of rate events per minute.
func PerMinute(rate int64) Limit { return Per(rate, time.Minute) }

// PerHour returns a limit of rate events per hour.
func PerHour(rate int64) Limit { return Per(rate, time.Hour) }

// WithBurst returns a copy of l with capacity burst.
func (l Limit) WithBurst(burst int64) Limit {
	l.Burst = burst
	return l
}

// Capacity returns Burst, or Rate when Burst is 0.
func (l Limit) Capacity() int64 {
	if l.Burst == 0 {
		return l.Rate
	}
	return l.Burst
}

// PeriodMicros returns Period in whole microseconds.
func (l Limit) PeriodMicros() int64 { return int64(l.Period / time.Microsecond) }

// IntervalMicros returns the emission interval, Period/Rate, rounded up to a
// whole microsecond: the time one event's worth of capacity takes to come
// back. It is 0 for a limit whose Rate is not positive.
func (l Limit) IntervalMicros() int64 {
	if l.Rate <= 0 {
		return 0
	}
	p := l.PeriodMicros()
	return (p + l.Rate - 1) / l.Rate
}

// Validate reports why l cannot be enforced, as an error wrapping
// [ErrInvalidLimit], or nil.
func (l Limit) Validate() error {
	if l.Calendar != NoCalendar {
		if err := l.validateCalendar(); err != nil {
			return err
		}
	}
	switch {
	case l.Rate < 1:
		return fmt.Errorf("%w: rate %d: must be at least 1", ErrInvalidLimit, l.Rate)
	case l.Period < time.Millisecond:
		return fmt.Errorf("%w: period %v: must be at least 1ms", ErrInvalidLimit, l.Period)
	case l.Period%time.Microsecond != 0:
		return fmt.Errorf("%w: period %v: must be a whole number of microseconds", ErrInvalidLimit, l.Period)
	case l.Burst < 0:
		return fmt.Errorf("%w: burst %d: must not be negative", ErrInvalidLimit, l.Burst)
	case l.Rate > l.PeriodMicros():
		return fmt.Errorf("%w: rate %d per %v: at most one event per microsecond", ErrInvalidLimit, l.Rate, l.Period)
	}
	if !l.withinSpan() {
		return fmt.Errorf("%w: %v: refilling from empty would take longer than %v", ErrInvalidLimit, l, time.Duration(MaxSpan)*time.Microsecond)
	}
	return nil
}

// withinSpan reports whether refilling from empty takes at most MaxSpan,
// without a division: Validate runs on every hit a store decides.
func (l Limit) withinSpan() bool {
	p := l.PeriodMicros()
	if p > MaxSpan {
		return false
	}
	// The interval is at most the period, so capacity × period within the
	// span settles it without dividing; otherwise divide and check exactly.
	if hi, lo := bits.Mul64(uint64(l.Capacity()), uint64(p)); hi == 0 && lo <= uint64(MaxSpan) {
		return true
	}
	hi, lo := bits.Mul64(uint64(l.Capacity()), uint64(l.IntervalMicros()))
	return hi == 0 && lo <= uint64(MaxSpan)
}

// validateCalendar checks what a calendar limit needs beyond any limit's.
func (l Limit) validateCalendar() error {
	switch {
	case !l.Calendar.Valid():
		return fmt.Errorf("%w: unknown calendar %d", ErrInvalidLimit, l.Calendar)
	case l.Period != l.Calendar.Nominal():
		return fmt.Errorf("%w: a %v calendar limit has the period %v, not %v: build it with PerCalendar", ErrInvalidLimit, l.Calendar, l.Calendar.Nominal(), l.Period)
	case l.Burst != 0 && l.Burst != l.Rate:
		return fmt.Errorf("%w: burst %d: a calendar limit counts Rate per period and has no burst", ErrInvalidLimit, l.Burst)
	case l.Rate > MaxCalendarRate:
		return fmt.Errorf("%w: rate %d: a calendar limit allows at most %d per period", ErrInvalidLimit, l.Rate, MaxCalendarRate)
	}
	return nil
}

// String describes l, e.g. "100/1m", "10/1s burst 20", or, for a calendar
// limit, "10000/month Europe/Berlin" ("10000/month" in UTC).
func (l Limit) String() string {
	if l.Calendar != NoCalendar {
		s := strconv.FormatInt(l.Rate, 10) + "/" + l.Calendar.String()
		if z := l.Location().String(); z != "UTC" {
			s += " " + z
		}
		return s
	}
	s := strconv.FormatInt(l.Rate, 10) + "/" + formatPeriod(l.Period)
	if l.Burst != 0 && l.Burst != l.Rate {
		s += " burst " + strconv.FormatInt(l.Burst, 10)
	}
	return s
}

func formatPeriod(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d >= time.Minute && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d >= time.Second && d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}
