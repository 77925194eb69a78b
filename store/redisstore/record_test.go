package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/storetest"
)

// TestRememberedCallReportsOtherHits: a programmatic two-hit call answered
// from the refusal memory reports, for its other hit, what the store last
// said of its bucket (10 left) rather than 0, without a script call and
// without allocating; the store hands its record of each bucket to a local
// fallback once.
func TestRememberedCallReportsOtherHits(t *testing.T) {
	srv := redistest.Start(t)
	clock := storetest.NewClock(time.Now().Truncate(time.Hour).Add(time.Second)) // clear of a window's end
	store := newStore(t, newClient(t, srv.Addr), clock)
	ctx := context.Background()
	hits := []sluice.Hit{
		{Key: "record:a", Limit: sluice.PerMinute(20), Algorithm: sluice.FixedWindow},
		{Key: "record:b", Limit: sluice.PerHour(10), Algorithm: sluice.FixedWindow},
	}
	out := make([]sluice.Result, 2)
	for i := range 11 {
		if err := store.Take(ctx, hits, out); err != nil {
			t.Fatal(err)
		}
		if admitted := sluice.Admitted(hits, out); admitted != (i < 10) || out[0].Remembered {
			t.Fatalf("call %d: admitted %v remembered %v", i+1, admitted, out[0].Remembered)
		}
	}
	if out[0].Remaining != 10 {
		t.Fatalf("the refused call reports a: %d left, want 10", out[0].Remaining)
	}
	clock.Advance(500 * time.Millisecond)
	calls := cmdCalls(t, srv.Addr, "evalsha")
	if err := store.Take(ctx, hits, out); err != nil {
		t.Fatal(err)
	}
	if !out[0].Remembered || !out[0].Allowed || out[1].Allowed {
		t.Fatalf("not answered from memory: %+v", out)
	}
	if out[0].Remaining != 10 || out[0].ResetAfter <= 0 || out[0].ResetAfter > time.Minute {
		t.Errorf("a beside a remembered refusal: %d left, reset in %v; want 10, within the minute", out[0].Remaining, out[0].ResetAfter)
	}
	if n := testing.AllocsPerRun(100, func() { _ = store.Take(ctx, hits, out) }); n != 0 {
		t.Errorf("a call answered from memory allocates %v times", n)
	}
	if got := cmdCalls(t, srv.Addr, "evalsha"); got != calls {
		t.Errorf("%d script calls for calls answered from memory", got-calls)
	}

	st, ok := store.ClaimBucket(&hits[1])
	if !ok || !st.Refused || st.Remaining != 0 {
		t.Errorf("b's record: %+v, %v; want refused, nothing left", st, ok)
	}
	if _, ok := store.ClaimBucket(&hits[1]); ok {
		t.Error("b's record claimed twice")
	}
	if st, ok := store.ClaimBucket(&hits[0]); !ok || st.Refused || st.Remaining != 10 {
		t.Errorf("a's record: %+v, %v; want 10 left", st, ok)
	}
	if err := store.Reset(ctx, hits[:1]); err != nil {
		t.Fatal(err)
	}
	if err := store.Take(ctx, hits[:1], out[:1]); err != nil {
		t.Fatal(err)
	}
	if err := store.Reset(ctx, hits[:1]); err != nil {
		t.Fatal(err)
	}
	if _, ok := store.ClaimBucket(&hits[0]); ok {
		t.Error("a's record outlived a reset")
	}
}
