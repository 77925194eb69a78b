package lease_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/lease"
)

// A calendar hit passes through to the backing store unleased, also in
// requests with a leased rule whose lease is out across the period's
// boundary: the backing store counts every calendar hit, the 4th of 3 a
// day is refused until midnight exactly, and the next day starts at it.
func TestCalendarPassesThroughAcrossBoundary(t *testing.T) {
	back, clock := backing(t)
	back.keys = map[string]int{}
	s := newStore(t, back, lease.Config{Clock: clock, Default: leaseAll, MaxLease: 4, SweepInterval: -1})
	day := sluice.PerCalendar(3, sluice.Day, nil)
	_, midnight := day.Window(clock.Now())
	clock.Set(midnight.Add(-time.Minute))
	leased := sluice.Hit{Key: "leased", Limit: sluice.PerMinute(1000)}
	cal := sluice.Hit{Key: "calendar", Limit: day, Algorithm: sluice.FixedWindow}
	takeFromLease(t, s, back, leased) // a lease of the other rule is out
	for i := range 3 {
		if r := take(t, s, leased, cal); !sluice.Admitted([]sluice.Hit{leased, cal}, r) || r[1].Remaining != int64(2-i) {
			t.Fatalf("request %d: %+v, want admitted with %d left today", i+1, r, 2-i)
		}
	}
	if r := take(t, s, leased, cal); r[1].Allowed || r[1].RetryAfter != time.Minute {
		t.Fatalf("4th request: %+v, want the calendar hit refused until midnight, a minute away", r[1])
	}
	clock.Set(midnight)
	r := take(t, s, leased, cal)
	if !r[1].Allowed || r[1].Remaining != 2 || r[1].ResetAfter != 24*time.Hour {
		t.Fatalf("first request of the next day: %+v, want allowed with 2 left until its end", r[1])
	}
	back.mu.Lock()
	defer back.mu.Unlock()
	if n := back.keys["calendar"]; n != 5 {
		t.Fatalf("the backing store saw %d calendar hits, want all 5: a calendar bucket is never leased", n)
	}
}
