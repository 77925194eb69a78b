package lease

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// TestDeniedAsClaimed: a hit refused by a remembered denial gets that
// denial's answer even when a refill ends between its claim and its
// result and clears the denial (the refill found all it asked for, so it
// sets no new one): never a RetryAfter counted from a zero denial.
func TestDeniedAsClaimed(t *testing.T) {
	h := sluice.Hit{Key: "k", Limit: sluice.PerSecond(10), Algorithm: sluice.TokenBucket, Cost: 1}
	pol := &sluice.LeasePolicy{Enabled: true}
	const now = int64(1_000_000_000) // µs
	for _, tt := range []struct {
		name  string
		renew bool // a refill ends between the claim and the result
	}{
		{"denial unchanged", false},
		{"refill ends in between", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEntry(&h, pol, time.Second)
			d := denial{cost: 1, until: now + 300_000, remaining: 0, fullAt: now + 1_000_000}
			e.deny = d
			p := plan{e: e, j: -1}
			if busy := p.claim(now, pol, 1, 5, 1, false, nil); busy != nil || p.kind != kDeny {
				t.Fatalf("claim: kind %v, busy %v; want a remembered denial", p.kind, busy != nil)
			}
			if tt.renew {
				e.mu.Lock()
				e.refilling = make(chan struct{})
				answer := sluice.Result{Allowed: true, Limit: h.Limit, Remaining: 5, Receipt: sluice.Receipt{Taken: 5}}
				e.renew(now, now, answer, 5, 5, cycle{})
				e.mu.Unlock()
			}
			var out sluice.Result
			p.settleLocal(now, &out, false)
			want := sluice.Result{Limit: h.Limit, Remaining: d.remaining, RetryAfter: 300 * time.Millisecond, ResetAfter: time.Second}
			if out != want {
				t.Fatalf("got %+v\nwant %+v", out, want)
			}
		})
	}
}
