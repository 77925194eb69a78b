package headers_test

import (
	"net/http"
	"testing"
	"time"
	_ "time/tzdata" // the zone below, whatever the machine has

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
)

// A calendar limit's window is the length of its period at the time: 23
// hours on the day Berlin's clocks go forward, 31 days in March (less the
// hour), and t counts down to the period's end.
func TestCalendarQuota(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 29, 20, 0, 0, 0, berlin)
	for _, tc := range []struct {
		l    sluice.Limit
		q, w int64
	}{
		{sluice.PerCalendar(500, sluice.Day, berlin), 500, 23 * 3600},
		{sluice.PerCalendar(10000, sluice.Month, berlin), 10000, 31*24*3600 - 3600},
		{sluice.PerCalendar(7, sluice.Week, nil), 7, 7 * 24 * 3600},
		{sluice.PerMinute(100), 100, 60}, // not a calendar: as Quota
	} {
		if q, w := headers.QuotaAt(tc.l, now); q != tc.q || w != tc.w {
			t.Errorf("%v: q=%d w=%d, want q=%d w=%d", tc.l, q, w, tc.q, tc.w)
		}
	}
	h := http.Header{}
	r := sluice.Result{Allowed: true, Limit: sluice.PerCalendar(500, sluice.Day, berlin), Remaining: 499, ResetAfter: 4 * time.Hour}
	headers.Write(h, headers.IETF, []headers.Policy{{Name: "daily", Result: r}}, 0, now)
	if got, want := h.Get("RateLimit-Policy"), `"daily";q=500;w=82800`; got != want {
		t.Errorf("RateLimit-Policy %q, want %q", got, want)
	}
	if got, want := h.Get("RateLimit"), `"daily";r=499;t=14400`; got != want {
		t.Errorf("RateLimit %q, want %q", got, want)
	}
}
