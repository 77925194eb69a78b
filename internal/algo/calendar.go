package algo

import (
	"time"

	"github.com/sluicehq/sluice"
)

// Calendar windows. A calendar limit (sluice.Limit.Calendar) counts like a
// fixed window whose windows are the periods of a time zone's calendar,
// of unequal lengths: the caller gives the window holding now, as
// boundaries in µs. The stored index is the window's start in
// CalendarUnit, unique to it (no zone's period since 1970 is shorter),
// and the count is packed with it as a fixed window's is, with
// CalendarPeriod in place of the period.

// CalendarUnit is the unit of a calendar window's index, in µs: fifteen
// minutes, the finest step of any zone's offset.
const CalendarUnit = 15 * 60 * 1_000_000

// CalendarPeriod stands for the period in a calendar window's packed state
// (index × (CalendarPeriod + 1) + count) and caps its count: 2^30 − 1, so
// every packed value stays below 2^53 for windows starting before 2200.
const CalendarPeriod = 1<<30 - 1

// CalendarSpan is a calendar window and the end of the one after it, in
// Unix µs.
type CalendarSpan struct {
	Start, End, NextEnd int64
}

// CalendarIndex returns the index of the calendar window starting at
// start µs.
func CalendarIndex(start int64) int64 { return floorDiv(start, CalendarUnit) }

// CalendarWindow decides a hit of cost on a calendar window counter stored
// as index holding count, at now, in the window w.Start ≤ now < w.End. As
// for a fixed window, a stored window later than now's (the clock went
// back) stays current, until w.NextEnd. It returns the outcome and the
// window and count to store if the hit consumes.
func CalendarWindow(now int64, w CalendarSpan, index, count, limit, cost int64, force bool) (o Outcome, nextIndex, nextCount int64) {
	idx, end := CalendarIndex(w.Start), w.End
	if index > idx {
		idx, end = index, w.NextEnd
	}
	return window(idx, max(end-now, 1), index, count, limit, cost, ForceCap(limit, CalendarPeriod), force)
}

// floorDiv returns a/b rounded toward negative infinity, for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// SpanOf returns the calendar window of l holding now (Unix µs) and the end
// of the next one.
func SpanOf(l sluice.Limit, now int64) CalendarSpan {
	start, end := l.Window(time.UnixMicro(now))
	_, next := l.Window(end)
	return CalendarSpan{Start: start.UnixMicro(), End: end.UnixMicro(), NextEnd: next.UnixMicro()}
}

// Bounds returns four consecutive boundaries of l's calendar windows
// around now (Unix µs): the start of the window before now's, now's start
// and end, and the end of the next, so that a store whose clock is within
// a period of now finds its window among them.
func Bounds(l sluice.Limit, now int64) [4]int64 {
	start, end := l.Window(time.UnixMicro(now))
	before, _ := l.Window(start.Add(-time.Microsecond))
	_, next := l.Window(end)
	return [4]int64{before.UnixMicro(), start.UnixMicro(), end.UnixMicro(), next.UnixMicro()}
}
