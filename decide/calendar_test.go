package decide_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
)

// With the store failing, on_fail: local decides a calendar limit on the
// instance's share of what the store last said remained in the period
// (never a fresh period's share), refusing until the period's end; with
// no record, on its share of the rate.
func TestLocalCalendarShare(t *testing.T) {
	day := sluice.PerCalendar(40, sluice.Day, nil)
	for _, tt := range []struct {
		name     string
		state    sluice.BucketState
		known    bool
		admitted int // of 30 requests, 4 instances
	}{
		{"no record: the share of the rate", sluice.BucketState{}, false, 10},
		{"12 left in the period: 3 each", sluice.BucketState{Remaining: 12, ResetAfter: time.Hour}, true, 3},
		{"refused in the period: none", sluice.BucketState{Refused: true, RetryAfter: time.Hour, ResetAfter: time.Hour}, true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := &recordingStore{failingStore: failingStore{down(0)}, state: tt.state, known: tt.known}
			dc, err := decide.New(store, decide.WithInstances(4), quiet)
			if err != nil {
				t.Fatal(err)
			}
			set := rules.MustNew(rules.Rule{Name: "daily", Key: keyfunc.Global(), Limit: day, Algorithm: sluice.FixedWindow})
			admitted := 0
			var verdict decide.Verdict
			var retry time.Duration
			for range 30 {
				d := dc.Check(set, httptest.NewRequest("GET", "/", nil), nil)
				if d.Verdict == decide.Admitted {
					admitted++
				}
				verdict, retry = d.Verdict, d.RetryAfter
				d.Finish(context.Background(), 0)
			}
			if admitted != tt.admitted {
				t.Errorf("admitted %d of 30, want %d", admitted, tt.admitted)
			}
			// Refused until the period ends (UTC midnight), never sooner.
			_, end := day.Window(time.Now())
			if left := time.Until(end); verdict != decide.Refused || retry > left+time.Second || retry < left-time.Minute {
				t.Errorf("last request: %v, retry after %v, want refused until midnight, %v away", verdict, retry, left)
			}
		})
	}
}
