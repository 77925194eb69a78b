package lease_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/lease"
)

// A hit with a penalty passes through to the backing store unleased, even
// when its rule is leased and its limit large enough to lease: every hit
// reaches the store that keeps the block, so no leased token is spent
// through one.
func TestPenaltyPassesThroughUnleased(t *testing.T) {
	back, clock := backing(t)
	back.keys = map[string]int{}
	s := newStore(t, back, lease.Config{Clock: clock, Default: leaseAll, MaxLease: 4, SweepInterval: -1})
	hit := sluice.Hit{Key: "penalized", Limit: sluice.PerMinute(1000), Block: time.Hour}
	big := hit
	big.Cost = 1000
	for range 5 {
		take(t, s, hit)
	}
	if r := take(t, s, big)[0]; r.Allowed || !r.Blocked || !r.BlockStarted || r.RetryAfter != time.Hour {
		t.Fatalf("a refused request: %+v, want the refusal that starts an hour's block", r)
	}
	clock.Advance(time.Minute) // the bucket is full again
	if r := take(t, s, hit)[0]; r.Allowed || !r.Blocked || r.RetryAfter != 59*time.Minute {
		t.Fatalf("during the block: %+v, want blocked for 59 more minutes", r)
	}
	back.mu.Lock()
	defer back.mu.Unlock()
	if n := back.keys["penalized"]; n != 7 {
		t.Fatalf("the backing store saw %d hits, want all 7: a penalty's bucket is never leased", n)
	}
}
