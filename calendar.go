package sluice

import (
	"fmt"
	"strings"
	"time"
)

// Calendar names the calendar period a limit counts in: N per hour, day,
// week or month of a time zone, as an API plan sells it. The zero value,
// NoCalendar, is a limit per Period.
//
// A calendar limit counts like a [FixedWindow] whose windows are the
// zone's periods: a request passes when what the current period has
// admitted plus its cost stays within Rate, and the count starts again at
// the next boundary. Periods follow the zone's clock: a day is 23 or 25
// hours long on the days daylight saving time starts or ends, a month 28
// to 31 days; weeks start on Monday. See [Limit.Window].
type Calendar uint8

const (
	// NoCalendar is a limit per Period, the default.
	NoCalendar Calendar = iota
	// Hour counts per hour of the zone's clock. Where the zone's offset
	// changes within an hour (by half an hour, as on Lord Howe Island),
	// the change is a boundary too.
	Hour
	// Day counts per day, from midnight to midnight in the zone (where
	// midnight does not exist, from the first instant of the day).
	Day
	// Week counts per week, from Monday's midnight to the next.
	Week
	// Month counts per month, from the first day's midnight to the next
	// month's.
	Month
)

var calendarNames = [...]string{NoCalendar: "", Hour: "hour", Day: "day", Week: "week", Month: "month"}

// nominal is each calendar's Period: the typical length of its periods.
var nominal = [...]time.Duration{Hour: time.Hour, Day: 24 * time.Hour, Week: 7 * 24 * time.Hour, Month: 30 * 24 * time.Hour}

// String returns the calendar's configuration name, such as "month" ("" for
// NoCalendar).
func (c Calendar) String() string {
	if int(c) < len(calendarNames) {
		return calendarNames[c]
	}
	return fmt.Sprintf("Calendar(%d)", uint8(c))
}

// Valid reports whether c is NoCalendar or a known calendar.
func (c Calendar) Valid() bool { return int(c) < len(calendarNames) }

// Nominal returns the typical length of c's periods, which a calendar
// limit holds in Period: an hour, 24 hours, 7 days, 30 days (0 for
// NoCalendar). The length of one period is [Limit.Window]'s.
func (c Calendar) Nominal() time.Duration {
	if c == NoCalendar || !c.Valid() {
		return 0
	}
	return nominal[c]
}

// ParseCalendar returns the calendar named s ("hour", "day", "week" or
// "month", any case), or an error wrapping [ErrInvalidLimit].
func ParseCalendar(s string) (Calendar, error) {
	norm := strings.ToLower(strings.TrimSpace(s))
	for i, name := range calendarNames {
		if i > 0 && name == norm {
			return Calendar(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown calendar %q (known: hour, day, week, month)", ErrInvalidLimit, s)
}

// MaxCalendarRate is the largest Rate of a calendar limit: 2^30 − 1, about
// a billion per period. (A calendar window's count and index share one
// integer in the Redis store, below 2^53.)
const MaxCalendarRate = 1<<30 - 1

// PerCalendar returns a limit of rate events per calendar period c of the
// time zone loc (nil: UTC), such as PerCalendar(10000, Month, berlin). It
// is enforced as a [FixedWindow]; Period holds c's nominal length.
//
// The zone comes from [time.LoadLocation], which needs the system's time
// zone database or a program that imports time/tzdata.
func PerCalendar(rate int64, c Calendar, loc *time.Location) Limit {
	return Limit{Rate: rate, Period: c.Nominal(), Calendar: c, Zone: loc}
}

// IsCalendar reports whether l counts in calendar periods.
func (l Limit) IsCalendar() bool { return l.Calendar != NoCalendar }

// Location returns the zone of l's calendar periods: Zone, or UTC when Zone
// is nil.
func (l Limit) Location() *time.Location {
	if l.Zone == nil {
		return time.UTC
	}
	return l.Zone
}

// SamePeriod reports whether l and o count over the same periods: the
// same Period, calendar and zone (zones compared by name).
func (l Limit) SamePeriod(o Limit) bool {
	if l.Period != o.Period || l.Calendar != o.Calendar {
		return false
	}
	return l.Calendar == NoCalendar || l.Location().String() == o.Location().String()
}

// Window returns the period of l that holds t: [start, end). For a
// calendar limit it is the calendar period of l's zone; for any other, the
// window of Period aligned to the Unix epoch, as [FixedWindow] counts it.
func (l Limit) Window(t time.Time) (start, end time.Time) {
	if l.Calendar == NoCalendar || !l.Calendar.Valid() {
		if l.Period <= 0 {
			return t, t
		}
		p := int64(l.Period)
		n := t.UnixNano()
		s := n - n%p
		if n%p < 0 {
			s -= p
		}
		return time.Unix(0, s), time.Unix(0, s+p)
	}
	loc := l.Location()
	lt := t.In(loc)
	if l.Calendar == Hour {
		return hourWindow(lt)
	}
	y, m, d := lt.Date()
	switch l.Calendar {
	case Week:
		d -= (int(lt.Weekday()) + 6) % 7
	case Month:
		d = 1
	}
	start = firstInstant(y, m, d, loc)
	switch l.Calendar {
	case Day:
		end = firstInstant(y, m, d+1, loc)
	case Week:
		end = firstInstant(y, m, d+7, loc)
	default:
		end = firstInstant(y, m+1, 1, loc)
	}
	// Guards for a zone whose clock is stranger than any known: the period
	// always holds t.
	if start.After(t) {
		start = t
	}
	if !end.After(t) {
		end = t.Add(time.Second)
	}
	return start, end
}

// hourWindow returns the hour of t's zone holding t: from the last whole
// hour on its clock, or the last change of the zone's offset if later, to
// the next whole hour, or the next change if sooner.
func hourWindow(t time.Time) (start, end time.Time) {
	into := time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())
	start = t.Add(-into)
	end = start.Add(time.Hour)
	zs, ze := t.ZoneBounds()
	if !zs.IsZero() && zs.After(start) {
		start = zs
	}
	if !ze.IsZero() && ze.Before(end) {
		end = ze
	}
	return start, end
}

// firstInstant returns the first instant of the day y-m-d (normalized as
// time.Date does) in loc: its midnight, the earlier one where the clock
// goes back over midnight, or the end of the gap where it skips midnight.
func firstInstant(y int, m time.Month, d int, loc *time.Location) time.Time {
	midnight := time.Date(y, m, d, 0, 0, 0, 0, time.UTC) // the wall clock to find
	t0 := time.Date(y, m, d, 0, 0, 0, 0, loc)
	zs, ze := t0.ZoneBounds()
	// The instants whose clock reads that midnight under each offset in
	// force around t0: the earliest one that does is the answer.
	probes, n := [3]time.Time{t0}, 1
	if !zs.IsZero() {
		probes[n], n = zs.Add(-time.Nanosecond), n+1
	}
	if !ze.IsZero() {
		probes[n], n = ze, n+1
	}
	var best time.Time
	for _, p := range probes[:n] {
		_, off := p.In(loc).Zone()
		c := midnight.Add(-time.Duration(off) * time.Second)
		if wall(c.In(loc)).Equal(midnight) && (best.IsZero() || c.Before(best)) {
			best = c
		}
	}
	if !best.IsZero() {
		return best
	}
	// Midnight is skipped: the day starts where the clock jumps over it.
	for _, b := range [...]time.Time{zs, ze} {
		if !b.IsZero() && !wall(b.In(loc)).Before(midnight) && wall(b.Add(-time.Nanosecond).In(loc)).Before(midnight) {
			return b
		}
	}
	return t0
}

// wall returns the time t's clock reads, as a UTC time with those fields.
func wall(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}
