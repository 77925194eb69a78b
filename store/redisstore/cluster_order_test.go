package redisstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// refundCounter is a go-redis hook counting the refund script calls.
type refundCounter struct{ n atomic.Int64 }

func (*refundCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (rc *refundCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		rc.count(cmd)
		return next(ctx, cmd)
	}
}

func (rc *refundCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			rc.count(cmd)
		}
		return next(ctx, cmds)
	}
}

func (rc *refundCounter) count(cmd redis.Cmder) {
	if a := cmd.Args(); len(a) > 1 && a[1] == redisstore.RefundSHA() {
		rc.n.Add(1)
	}
}

// testClusterScarceFirst: a request of two rules in two slots, one of
// them scarce (a capacity of 1: two requests in flight could empty it), is
// decided in order, the scarce bucket first. Refused there, it takes
// nothing in the other slot (no refund is sent) and reports for the other
// hit what is left without consuming; admitted there and refused by the
// other, its take is given back; admitted, both take. A bucket that only
// a refusal shows to be empty orders the requests on its slot for a
// second after its last refusal, and no longer.
func testClusterScarceFirst(t *testing.T, c *redistest.Cluster) {
	ctx := context.Background()
	type want struct {
		admitted  bool
		remaining [2]int64 // per hit
		receipts  bool
		refunds   int64
	}
	for _, tc := range []struct {
		name    string
		spent   [2]int // takes of each bucket before the request
		limit   [2]int64
		want    want
		refills [2]int64 // each bucket's remaining after the request
	}{
		{"refused by the scarce bucket", [2]int{1, 0}, [2]int64{1, 10}, want{false, [2]int64{0, 10}, false, 0}, [2]int64{0, 10}},
		{"refused by the other", [2]int{0, 10}, [2]int64{1, 10}, want{false, [2]int64{1, 0}, false, 1}, [2]int64{1, 0}},
		{"admitted", [2]int{0, 0}, [2]int64{1, 10}, want{true, [2]int64{0, 9}, true, 0}, [2]int64{0, 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := newClusterClient(t, c.Addrs())
			refunds := &refundCounter{}
			client.AddHook(refunds)
			s := newStoreWith(t, client, storetest.NewClock(time.Now()), redisstore.Config{RememberRefusals: -1})
			hits := hitsInSlots(t, s, c, 2, fmt.Sprintf("scarce-%d-", time.Now().UnixNano()), sluice.TokenBucket, sluice.PerHour(1))
			for i := range hits {
				hits[i].Limit = sluice.PerHour(tc.limit[i])
				spend(t, s, hits[i], tc.spent[i])
			}
			out := make([]sluice.Result, 2)
			if err := s.Take(ctx, hits, out); err != nil {
				t.Fatal(err)
			}
			if sluice.Admitted(hits, out) != tc.want.admitted {
				t.Fatalf("admitted %v, want %v: %+v", !tc.want.admitted, tc.want.admitted, out)
			}
			for i := range out {
				if out[i].Remaining != tc.want.remaining[i] || (out[i].Receipt.Taken > 0) != tc.want.receipts {
					t.Errorf("hit %d: %+v, want %d remaining, receipt %v", i, out[i], tc.want.remaining[i], tc.want.receipts)
				}
				if got := peek(t, s, hits[i]).Remaining; got != tc.refills[i] {
					t.Errorf("bucket %d has %d left, want %d", i, got, tc.refills[i])
				}
			}
			if n := refunds.n.Load(); n != tc.want.refunds {
				t.Errorf("%d refund calls, want %d", n, tc.want.refunds)
			}
		})
	}

	t.Run("low for a second", func(t *testing.T) {
		client := newClusterClient(t, c.Addrs())
		refunds := &refundCounter{}
		client.AddHook(refunds)
		clock := storetest.NewClock(time.Now())
		s := newStoreWith(t, client, clock, redisstore.Config{RememberRefusals: -1})
		redisstore.SetScarcityClock(s, clock.Now)
		// Neither bucket is scarce by its capacity; the first is empty.
		hits := hitsInSlots(t, s, c, 2, fmt.Sprintf("low-%d-", time.Now().UnixNano()), sluice.TokenBucket, sluice.PerHour(5))
		hits[1].Limit = sluice.PerHour(10)
		spend(t, s, hits[0], 5)
		out := make([]sluice.Result, 2)
		for i, step := range []struct {
			advance time.Duration
			refunds int64 // refund calls in all after the request
		}{
			{0, 1},                       // side by side: the other slot's take is given back
			{999 * time.Millisecond, 1},  // in order: the empty bucket refuses first
			{1001 * time.Millisecond, 2}, // over a second after the last refusal: side by side again
		} {
			clock.Advance(step.advance)
			if err := s.Take(ctx, hits, out); err != nil {
				t.Fatal(err)
			}
			if sluice.Admitted(hits, out) || out[0].Allowed || !out[1].Allowed || out[1].Remaining != 10 {
				t.Fatalf("request %d: %+v, want refused by the first hit, 10 left in the other", i, out)
			}
			if n := refunds.n.Load(); n != step.refunds {
				t.Fatalf("request %d: %d refund calls in all, want %d", i, n, step.refunds)
			}
		}
	})
}

// spend takes n units from h's bucket, one call per unit.
func spend(t *testing.T, s sluice.Store, h sluice.Hit, n int) {
	t.Helper()
	out := make([]sluice.Result, 1)
	for range n {
		if err := s.Take(context.Background(), []sluice.Hit{h}, out); err != nil || !out[0].Allowed {
			t.Fatalf("take of %q: %+v %v", h.Key, out[0], err)
		}
	}
}
