package memstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/storetest"
)

// The penalty records are bounded by MaxBuckets, and the sweeper forgets
// those whose block and counting period are over.
func TestPenaltyRecordsBounded(t *testing.T) {
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	s := New(Config{Clock: clock, MaxBuckets: 16, SweepInterval: -1})
	defer s.Close(context.Background())
	out := make([]sluice.Result, 1)
	for i := range 100 {
		h := sluice.Hit{Key: fmt.Sprint("flood-", i), Limit: sluice.PerMinute(1), Block: time.Hour, Cost: 2} // never passes: refused, blocked
		if err := s.Take(context.Background(), []sluice.Hit{h}, out); err != nil || !out[0].Blocked {
			t.Fatalf("identity %d: %+v %v, want blocked", i, out[0], err)
		}
		if n := len(s.pen.m); n > 16 {
			t.Fatalf("%d penalty records after %d identities, want at most MaxBuckets (16)", n, i+1)
		}
	}
	clock.Advance(time.Hour)
	s.Sweep()
	if n := len(s.pen.m); n != 0 {
		t.Fatalf("%d penalty records an hour on, after a sweep, want 0", n)
	}
}
