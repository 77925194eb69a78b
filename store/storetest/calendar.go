package storetest

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// calendarCases are calendar periods of unequal lengths: month ends of 28,
// 29, 30 and 31 days, the daylight saving days of Europe/Berlin and
// America/New_York (23 and 25 hours), an hour of Berlin's clock going
// back, a week, and days in the zones at +14 and −12.
var calendarCases = []struct {
	name string
	zone string
	cal  sluice.Calendar
	at   string // RFC 3339: an instant in the period
}{
	{"28-day month", "UTC", sluice.Month, "2026-02-10T12:00:00Z"},
	{"29-day month", "UTC", sluice.Month, "2028-02-10T12:00:00Z"},
	{"30-day month", "Europe/Berlin", sluice.Month, "2026-04-10T12:00:00+02:00"},
	{"31-day month", "America/New_York", sluice.Month, "2026-01-10T12:00:00-05:00"},
	{"Berlin 23-hour day", "Europe/Berlin", sluice.Day, "2026-03-29T12:00:00+02:00"},
	{"Berlin 25-hour day", "Europe/Berlin", sluice.Day, "2026-10-25T12:00:00+01:00"},
	{"New York 23-hour day", "America/New_York", sluice.Day, "2026-03-08T12:00:00-04:00"},
	{"New York 25-hour day", "America/New_York", sluice.Day, "2026-11-01T12:00:00-05:00"},
	{"Berlin hour before the clock goes back", "Europe/Berlin", sluice.Hour, "2026-10-25T02:30:00+02:00"},
	{"week", "UTC", sluice.Week, "2026-01-01T12:00:00Z"},
	{"day at +14", "Pacific/Kiritimati", sluice.Day, "2026-03-01T12:00:00+14:00"},
	{"day at -12", "Etc/GMT+12", sluice.Day, "2026-03-01T12:00:00-12:00"},
}

// testCalendar: a calendar limit counts like a fixed window of its zone's
// periods, whatever their length: 3 per period pass, the 4th is refused
// until the next boundary (RetryAfter the exact time to it), the next
// period starts afresh, ResetAfter is the time to the period's end, and a
// clock gone back keeps the later period current.
func testCalendar(t *testing.T, newHarness Factory) {
	for _, tc := range calendarCases {
		t.Run(tc.name, func(t *testing.T) {
			loc, err := time.LoadLocation(tc.zone)
			if err != nil {
				t.Fatalf("zone %s: %v (the zone database, or time/tzdata in the test binary)", tc.zone, err)
			}
			at, err := time.Parse(time.RFC3339, tc.at)
			if err != nil {
				t.Fatal(err)
			}
			l := sluice.PerCalendar(3, tc.cal, loc)
			start, end := l.Window(at)
			_, next := l.Window(end)
			h := newHarness(t)
			hit := sluice.Hit{Key: uniqueKey(t, "calendar"), Limit: l, Algorithm: sluice.FixedWindow}
			check := func(what string, r sluice.Result, allowed bool, remaining int64, retry, reset time.Duration) {
				t.Helper()
				if r.Allowed != allowed || r.Remaining != remaining || r.RetryAfter != retry || r.ResetAfter != reset || r.Unsatisfiable || r.Limit != l {
					t.Fatalf("%s (period [%v, %v)): %+v, want allowed %v, remaining %d, retry after %v, reset after %v",
						what, start.In(loc), end.In(loc), r, allowed, remaining, retry, reset)
				}
			}
			h.SetTime(start)
			check("first of the period", take1(t, h.Store, hit), true, 2, 0, end.Sub(start))
			h.SetTime(end.Add(-time.Second))
			two := hit
			two.Cost = 2
			check("the rest, a second before the end", take1(t, h.Store, two), true, 0, 0, time.Second)
			check("one too many", take1(t, h.Store, hit), false, 0, time.Second, time.Second)
			peek := hit
			peek.Peek = true
			check("a peek", take1(t, h.Store, peek), false, 0, time.Second, time.Second)
			h.SetTime(end)
			check("first of the next period", take1(t, h.Store, hit), true, 2, 0, next.Sub(end))
			four := hit
			four.Cost = 4
			if r := take1(t, h.Store, four); !r.Unsatisfiable || r.Allowed {
				t.Fatalf("cost 4 of 3 per period: %+v, want unsatisfiable", r)
			}
			// The clock goes back over the boundary: the later period
			// stays current, nothing is minted.
			h.SetTime(end.Add(-time.Second))
			check("the clock gone back", take1(t, h.Store, hit), true, 1, 0, next.Sub(end)+time.Second)
		})
	}
}

// testCalendarZones: one key counted under calendar limits of two zones
// keeps a bucket per zone. A count means something only in its own zone's
// periods: read against another zone's, a Tokyo day used up at 01:00 New
// York time would refuse the New York day until the end of the next one.
func testCalendarZones(t *testing.T, newHarness Factory) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatalf("zone Asia/Tokyo: %v (the zone database, or time/tzdata in the test binary)", err)
	}
	newYork, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatalf("zone America/New_York: %v", err)
	}
	h := newHarness(t)
	now := time.Date(2026, 3, 10, 16, 0, 0, 0, time.UTC) // 01:00 on the 11th in Tokyo, noon on the 10th in New York
	h.SetTime(now)
	key := uniqueKey(t, "calendar-zones")
	tokyoHit := sluice.Hit{Key: key, Limit: sluice.PerCalendar(3, sluice.Day, tokyo), Algorithm: sluice.FixedWindow, Cost: 3}
	if r := take1(t, h.Store, tokyoHit); !r.Allowed {
		t.Fatalf("Tokyo's day, 3 of 3: %+v", r)
	}
	nyHit := sluice.Hit{Key: key, Limit: sluice.PerCalendar(3, sluice.Day, newYork), Algorithm: sluice.FixedWindow}
	_, end := nyHit.Limit.Window(now)
	if r := take1(t, h.Store, nyHit); !r.Allowed || r.Remaining != 2 || r.ResetAfter != end.Sub(now) {
		t.Fatalf("the same key under New York's day: %+v, want a bucket of its own (allowed, 2 left, reset after %v)", r, end.Sub(now))
	}
	tokyoHit.Cost = 1
	if r := take1(t, h.Store, tokyoHit); r.Allowed {
		t.Fatalf("Tokyo's day again: %+v, want still refused", r)
	}
}
