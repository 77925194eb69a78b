package redisstore_test

import (
	"context"
	"testing"
	"time"
	_ "time/tzdata" // the zones of the calendar tests, whatever the machine has

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// A calendar limit is decided on the server's clock: a process whose clock
// is off by less than a period sends the boundaries around its own now,
// and the script counts in the period that holds the server's.
func TestCalendarServerClockChooses(t *testing.T) {
	srv := redistest.Start(t)
	ny := mustZone("America/New_York")
	midnight := time.Date(2026, 7, 10, 0, 0, 0, 0, ny)
	server := storetest.NewClock(midnight.Add(-10 * time.Minute))
	process := storetest.NewClock(midnight.Add(20 * time.Minute)) // 30 minutes ahead
	s := newStoreWith(t, newClient(t, srv.Addr), server, redisstore.Config{Clock: process, RememberRefusals: -1})
	hit := sluice.Hit{Key: "calendar-skew-" + time.Now().Format(time.RFC3339Nano), Limit: sluice.PerCalendar(3, sluice.Day, ny), Algorithm: sluice.FixedWindow}
	take := func() sluice.Result {
		t.Helper()
		var out [1]sluice.Result
		if err := s.Take(context.Background(), []sluice.Hit{hit}, out[:]); err != nil {
			t.Fatal(err)
		}
		return out[0]
	}
	for i := range 3 {
		if r := take(); !r.Allowed || r.ResetAfter != 10*time.Minute {
			t.Fatalf("take %d on the server's 9 July: %+v, want allowed until its midnight, 10 minutes away", i+1, r)
		}
	}
	if r := take(); r.Allowed || r.RetryAfter != 10*time.Minute {
		t.Fatalf("4th take: %+v, want refused until the server's midnight, 10 minutes away", r)
	}
	// Now the process is behind: the server's new day has begun.
	server.Set(midnight.Add(5 * time.Minute))
	process.Set(midnight.Add(-25 * time.Minute))
	if r := take(); !r.Allowed || r.Remaining != 2 || r.ResetAfter != 24*time.Hour-5*time.Minute {
		t.Fatalf("first take of the server's 10 July: %+v, want allowed with 2 left until its end", r)
	}
}

// A calendar bucket's key expires when its period ends, on the server's
// clock.
func TestCalendarKeyExpiresWithPeriod(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv.Addr)
	s := newStore(t, client, nil)
	// Of two zones whose hours end a quarter of an hour apart, the one
	// whose hour ends later: the take never lands next to a boundary,
	// where Redis could count it in the next hour.
	limit := sluice.PerCalendar(5, sluice.Hour, mustZone("Asia/Kathmandu"))
	if _, end := limit.Window(time.Now()); time.Until(end) < time.Minute {
		limit = sluice.PerCalendar(5, sluice.Hour, mustZone("Asia/Kolkata"))
	}
	hit := sluice.Hit{Key: "calendar-ttl-" + time.Now().Format(time.RFC3339Nano), Limit: limit, Algorithm: sluice.FixedWindow}
	var out [1]sluice.Result
	before := time.Now()
	if err := s.Take(context.Background(), []sluice.Hit{hit}, out[:]); err != nil || !out[0].Allowed {
		t.Fatalf("%+v %v", out[0], err)
	}
	_, end := hit.Limit.Window(before)
	ttl, err := client.PTTL(context.Background(), redisstore.KeyOf(s, hit)).Result()
	if err != nil {
		t.Fatal(err)
	}
	// The key lives until the period's end (at least a second), and
	// ResetAfter says the same; the slack is generous against a slow
	// machine, far below a period.
	want := max(end.Sub(before), time.Second)
	if ttl > want+time.Second || ttl < want-5*time.Second {
		t.Fatalf("PTTL %v, want about %v (the period ends at %v)", ttl, want, end)
	}
	if d := out[0].ResetAfter - end.Sub(before); d > time.Second || d < -5*time.Second {
		t.Fatalf("ResetAfter %v, want about %v", out[0].ResetAfter, end.Sub(before))
	}
}
