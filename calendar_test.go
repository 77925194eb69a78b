package sluice_test

import (
	"errors"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, whatever the machine has

	"github.com/sluicehq/sluice"
)

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Calendar periods in their zones: month ends, the daylight saving changes
// of Europe/Berlin, America/New_York and America/Santiago (where midnight
// repeats, and where it is skipped), a half-hour change on Lord Howe
// Island, and the zones at +14 and −12.
func TestLimitWindow(t *testing.T) {
	cases := []struct {
		zone       string
		cal        sluice.Calendar
		at         string // RFC 3339
		start, end string
		hours      float64
	}{
		{"UTC", sluice.Month, "2026-02-14T12:00:00Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", 28 * 24},
		{"UTC", sluice.Month, "2028-02-29T23:59:59Z", "2028-02-01T00:00:00Z", "2028-03-01T00:00:00Z", 29 * 24},
		{"UTC", sluice.Month, "2026-04-01T00:00:00Z", "2026-04-01T00:00:00Z", "2026-05-01T00:00:00Z", 30 * 24},
		{"UTC", sluice.Month, "2026-01-31T23:59:59Z", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z", 31 * 24},
		{"UTC", sluice.Month, "2026-12-31T23:00:00Z", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z", 31 * 24},
		{"Europe/Berlin", sluice.Month, "2026-03-15T12:00:00+01:00", "2026-03-01T00:00:00+01:00", "2026-04-01T00:00:00+02:00", 31*24 - 1},
		{"Europe/Berlin", sluice.Day, "2026-03-29T12:00:00+02:00", "2026-03-29T00:00:00+01:00", "2026-03-30T00:00:00+02:00", 23},
		{"Europe/Berlin", sluice.Day, "2026-10-25T02:30:00+01:00", "2026-10-25T00:00:00+02:00", "2026-10-26T00:00:00+01:00", 25},
		{"Europe/Berlin", sluice.Hour, "2026-10-25T02:30:00+02:00", "2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00", 1},
		{"Europe/Berlin", sluice.Hour, "2026-10-25T02:30:00+01:00", "2026-10-25T02:00:00+01:00", "2026-10-25T03:00:00+01:00", 1},
		{"Europe/Berlin", sluice.Hour, "2026-03-29T01:59:59+01:00", "2026-03-29T01:00:00+01:00", "2026-03-29T03:00:00+02:00", 1},
		{"Europe/Berlin", sluice.Week, "2026-03-29T23:00:00+02:00", "2026-03-23T00:00:00+01:00", "2026-03-30T00:00:00+02:00", 7*24 - 1},
		{"America/New_York", sluice.Day, "2026-03-08T03:00:00-04:00", "2026-03-08T00:00:00-05:00", "2026-03-09T00:00:00-04:00", 23},
		{"America/New_York", sluice.Day, "2026-11-01T01:30:00-05:00", "2026-11-01T00:00:00-04:00", "2026-11-02T00:00:00-05:00", 25},
		{"America/Santiago", sluice.Day, "2026-04-04T23:30:00-04:00", "2026-04-04T00:00:00-03:00", "2026-04-05T00:00:00-04:00", 25},
		{"America/Santiago", sluice.Day, "2026-09-06T12:00:00-03:00", "2026-09-06T01:00:00-03:00", "2026-09-07T00:00:00-03:00", 23},
		{"America/Santiago", sluice.Day, "2026-09-05T23:59:59-04:00", "2026-09-05T00:00:00-04:00", "2026-09-06T01:00:00-03:00", 24},
		{"Australia/Lord_Howe", sluice.Hour, "2026-10-04T02:45:00+11:00", "2026-10-04T02:30:00+11:00", "2026-10-04T03:00:00+11:00", 0.5},
		{"Pacific/Kiritimati", sluice.Day, "2026-03-01T00:00:00+14:00", "2026-03-01T00:00:00+14:00", "2026-03-02T00:00:00+14:00", 24},
		{"Pacific/Kiritimati", sluice.Month, "2026-02-28T10:00:00Z", "2026-03-01T00:00:00+14:00", "2026-04-01T00:00:00+14:00", 31 * 24},
		{"Etc/GMT+12", sluice.Day, "2026-03-01T11:59:59Z", "2026-02-28T00:00:00-12:00", "2026-03-01T00:00:00-12:00", 24},
		{"Etc/GMT+12", sluice.Week, "2026-01-01T12:00:00Z", "2025-12-29T00:00:00-12:00", "2026-01-05T00:00:00-12:00", 7 * 24},
		{"UTC", sluice.Week, "2026-01-04T23:59:59Z", "2025-12-29T00:00:00Z", "2026-01-05T00:00:00Z", 7 * 24},
		{"UTC", sluice.Hour, "2026-01-04T23:59:59Z", "2026-01-04T23:00:00Z", "2026-01-05T00:00:00Z", 1},
	}
	for _, tc := range cases {
		l := sluice.PerCalendar(10, tc.cal, mustZone(t, tc.zone))
		at := mustTime(t, tc.at)
		start, end := l.Window(at)
		if want := mustTime(t, tc.start); !start.Equal(want) {
			t.Errorf("%v at %s: start %v, want %v", l, tc.at, start.In(l.Zone), want)
		}
		if want := mustTime(t, tc.end); !end.Equal(want) {
			t.Errorf("%v at %s: end %v, want %v", l, tc.at, end.In(l.Zone), want)
		}
		if got := end.Sub(start).Hours(); got != tc.hours {
			t.Errorf("%v at %s: %v hours, want %v", l, tc.at, got, tc.hours)
		}
		// Every instant of the period is in it, and the next period
		// starts where it ends.
		if s, e := l.Window(end.Add(-time.Nanosecond)); !s.Equal(start) || !e.Equal(end) {
			t.Errorf("%v: the period's last instant is in [%v, %v)", l, s, e)
		}
		if s, _ := l.Window(end); !s.Equal(end) {
			t.Errorf("%v: the next period starts at %v, want %v", l, s, end)
		}
	}
}

func TestNonCalendarWindow(t *testing.T) {
	l := sluice.PerMinute(10)
	start, end := l.Window(time.Unix(90, 5))
	if start.Unix() != 60 || end.Unix() != 120 {
		t.Fatalf("[%v, %v), want the epoch-aligned minute [60, 120)", start.Unix(), end.Unix())
	}
}

func TestCalendarLimit(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	l := sluice.PerCalendar(10000, sluice.Month, berlin)
	if got := l.String(); got != "10000/month Europe/Berlin" {
		t.Errorf("String %q", got)
	}
	if got := sluice.PerCalendar(3, sluice.Day, nil).String(); got != "3/day" {
		t.Errorf("String %q", got)
	}
	if l.Period != 30*24*time.Hour || !l.IsCalendar() || sluice.PerMinute(1).IsCalendar() {
		t.Errorf("%+v", l)
	}
	if err := sluice.FixedWindow.ValidateLimit(l); err != nil {
		t.Error(err)
	}
	for _, tc := range []struct {
		alg   sluice.Algorithm
		limit sluice.Limit
		want  string
	}{
		{sluice.TokenBucket, l, "calendar limit counts as a fixed window"},
		{sluice.SlidingWindow, l, "calendar limit counts as a fixed window"},
		{sluice.FixedWindow, l.WithBurst(20), "no burst"},
		{sluice.FixedWindow, sluice.Limit{Rate: 10, Calendar: sluice.Day}, "build it with PerCalendar"},
		{sluice.FixedWindow, sluice.Limit{Rate: 10, Period: time.Hour, Calendar: 9}, "unknown calendar"},
		{sluice.FixedWindow, sluice.PerCalendar(sluice.MaxCalendarRate+1, sluice.Month, nil), "at most"},
		{sluice.FixedWindow, sluice.PerCalendar(0, sluice.Month, nil), "rate 0"},
	} {
		err := tc.alg.ValidateLimit(tc.limit)
		if !errors.Is(err, sluice.ErrInvalidLimit) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: %v, want an error saying %q", tc.alg, tc.limit, err, tc.want)
		}
	}
	if !l.SamePeriod(sluice.PerCalendar(5, sluice.Month, mustZone(t, "Europe/Berlin"))) ||
		l.SamePeriod(sluice.PerCalendar(5, sluice.Month, nil)) ||
		l.SamePeriod(sluice.Per(5, 30*24*time.Hour)) ||
		!sluice.PerCalendar(1, sluice.Day, nil).SamePeriod(sluice.PerCalendar(2, sluice.Day, time.UTC)) {
		t.Error("SamePeriod")
	}
}

func TestParseCalendar(t *testing.T) {
	for _, c := range []sluice.Calendar{sluice.Hour, sluice.Day, sluice.Week, sluice.Month} {
		if got, err := sluice.ParseCalendar(strings.ToUpper(c.String())); err != nil || got != c {
			t.Errorf("%v: %v, %v", c, got, err)
		}
	}
	for _, s := range []string{"", "quarter", "days", "Calendar(9)"} {
		if _, err := sluice.ParseCalendar(s); err == nil {
			t.Errorf("%q parsed", s)
		}
	}
}

// FuzzParseCalendar: a parsed calendar writes back as what was parsed.
func FuzzParseCalendar(f *testing.F) {
	for _, s := range []string{"hour", "Day", " week ", "MONTH", "", "year"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := sluice.ParseCalendar(s)
		if err != nil {
			return
		}
		if !strings.EqualFold(strings.TrimSpace(s), c.String()) || c == sluice.NoCalendar {
			t.Fatalf("%q parsed as %v", s, c)
		}
	})
}

// FuzzLimitWindow: in every zone and calendar, the period holding an
// instant holds it, is at least fifteen minutes (the unit a calendar
// window's index counts in the Redis store) and at most 32 days long,
// and the next period starts where it ends.
func FuzzLimitWindow(f *testing.F) {
	zones := []string{"UTC", "Europe/Berlin", "America/New_York", "America/Santiago", "Australia/Lord_Howe", "Pacific/Kiritimati", "Etc/GMT+12", "Asia/Kathmandu", "Pacific/Apia", "America/Havana"}
	f.Add(int64(1_774_746_000), uint8(2), uint8(1))
	f.Add(int64(1_792_000_000), uint8(1), uint8(3))
	f.Fuzz(func(t *testing.T, sec int64, cal, zone uint8) {
		at := time.Unix(int64(uint64(sec)%(1<<32)), 0) // 1970 to 2106
		l := sluice.PerCalendar(1, sluice.Calendar(1+cal%4), mustZone(t, zones[int(zone)%len(zones)]))
		start, end := l.Window(at)
		if at.Before(start) || !at.Before(end) {
			t.Fatalf("%v: %v outside its period [%v, %v)", l, at, start, end)
		}
		if d := end.Sub(start); d < 15*time.Minute || d > 32*24*time.Hour {
			t.Fatalf("%v at %v: a period of %v", l, at, d)
		}
		if s, _ := l.Window(end); !s.Equal(end) {
			t.Fatalf("%v at %v: the next period starts at %v, not at %v", l, at, s, end)
		}
	})
}
