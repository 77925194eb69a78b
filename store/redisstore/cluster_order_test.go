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

// refundCounter counts the refund script calls (a go-redis hook as
// cmdHook(rc.count)).
type refundCounter struct{ n atomic.Int64 }

func (rc *refundCounter) count(cmd redis.Cmder) {
	if a := cmd.Args(); len(a) > 1 && a[1] == redisstore.RefundSHA() {
		rc.n.Add(1)
	}
}

// testClusterScarceFirst: a request of two rules in two slots that could
// both run out (a capacity of 1: two requests in flight could empty it)
// is decided in order, the scarcest bucket first (ties: the lower slot).
// Refused there, it takes nothing in the other slot (no refund is sent)
// and reports for the other hit what is left without consuming; admitted
// there and refused by the other, its take is given back; admitted, both
// take. Buckets that only a result shows to be low order the requests on
// their slots, the smaller capacity first whatever the slots, for a
// second after the last such result, and no longer.
func testClusterScarceFirst(t *testing.T, c *redistest.Cluster) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		spent     [2]int // takes of each bucket before the request
		admitted  bool
		remaining [2]int64 // each hit's result
		receipts  bool
		refunds   int64
		left      [2]int64 // each bucket's after the request
	}{
		{"refused by the first", [2]int{1, 0}, false, [2]int64{0, 1}, false, 0, [2]int64{0, 1}},
		{"refused by the second", [2]int{0, 1}, false, [2]int64{1, 0}, false, 1, [2]int64{1, 0}},
		{"admitted", [2]int{0, 0}, true, [2]int64{0, 0}, true, 0, [2]int64{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, refunds, _ := orderedStore(t, c)
			hits := slotOrdered(t, s, c, "scarce", sluice.PerHour(1), sluice.PerHour(1), true)
			for i := range hits {
				spend(t, s, hits[i], tc.spent[i])
			}
			out := make([]sluice.Result, 2)
			if err := s.Take(ctx, hits, out); err != nil {
				t.Fatal(err)
			}
			if sluice.Admitted(hits, out) != tc.admitted {
				t.Fatalf("admitted %v, want %v: %+v", !tc.admitted, tc.admitted, out)
			}
			for i := range out {
				if out[i].Remaining != tc.remaining[i] || (out[i].Receipt.Taken > 0) != tc.receipts {
					t.Errorf("hit %d: %+v, want %d remaining, receipt %v", i, out[i], tc.remaining[i], tc.receipts)
				}
				if got := peek(t, s, hits[i]).Remaining; got != tc.left[i] {
					t.Errorf("bucket %d has %d left, want %d", i, got, tc.left[i])
				}
			}
			if n := refunds.n.Load(); n != tc.refunds {
				t.Errorf("%d refund calls, want %d", n, tc.refunds)
			}
		})
	}

	t.Run("low for a second", func(t *testing.T) {
		s, refunds, clock := orderedStore(t, c)
		redisstore.SetScarcityClock(s, clock.Now)
		// Neither bucket could run out by its capacity; the first is
		// empty, the second has one left, and its slot is the lower.
		hits := slotOrdered(t, s, c, "low", sluice.PerHour(5), sluice.PerHour(10), false)
		spend(t, s, hits[0], 5)
		spend(t, s, hits[1], 9)
		out := make([]sluice.Result, 2)
		for i, step := range []struct {
			advance time.Duration
			refunds int64 // refund calls in all after the request
		}{
			{0, 1},                       // side by side: the second's take is given back
			{999 * time.Millisecond, 1},  // in order: the empty bucket refuses first
			{1001 * time.Millisecond, 2}, // over a second after the last low result: side by side
		} {
			clock.Advance(step.advance)
			if err := s.Take(ctx, hits, out); err != nil {
				t.Fatal(err)
			}
			if sluice.Admitted(hits, out) || out[0].Allowed || !out[1].Allowed || out[1].Remaining != 1 {
				t.Fatalf("request %d: %+v, want refused by the first hit, 1 left in the second", i, out)
			}
			if n := refunds.n.Load(); n != step.refunds {
				t.Fatalf("request %d: %d refund calls in all, want %d", i, n, step.refunds)
			}
		}
	})
}

// orderedStore returns a store on c that remembers no refusals, the
// refund calls it sends, and its scripts' clock.
func orderedStore(t *testing.T, c *redistest.Cluster) (*redisstore.Store, *refundCounter, *storetest.Clock) {
	client := newClusterClient(t, c.Addrs())
	refunds := &refundCounter{}
	client.AddHook(cmdHook(refunds.count))
	clock := storetest.NewClock(time.Now())
	return newStoreWith(t, client, clock, redisstore.Config{RememberRefusals: -1}), refunds, clock
}

// slotOrdered returns two token-bucket hits of limits a and b, on fresh
// keys in two slots, the first's slot the lower if lower, else the higher.
func slotOrdered(t *testing.T, s *redisstore.Store, c *redistest.Cluster, prefix string, a, b sluice.Limit, lower bool) []sluice.Hit {
	hits := hitsInSlots(t, s, c, 2, fmt.Sprintf("%s-%d-", prefix, time.Now().UnixNano()), sluice.TokenBucket, a)
	slot := func(h sluice.Hit) int { return redisstore.SlotOf(redisstore.KeyOf(s, h)) }
	if slot(hits[0]) < slot(hits[1]) != lower {
		hits[0], hits[1] = hits[1], hits[0]
	}
	hits[1].Limit = b
	return hits
}

// spend takes n units from h's bucket, one call per unit.
func spend(t testing.TB, s sluice.Store, h sluice.Hit, n int) {
	t.Helper()
	out := make([]sluice.Result, 1)
	for range n {
		if err := s.Take(context.Background(), []sluice.Hit{h}, out); err != nil || !out[0].Allowed {
			t.Fatalf("take of %q: %+v %v", h.Key, out[0], err)
		}
	}
}
