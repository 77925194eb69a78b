package lease_test

import (
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/lease"
)

// A request refused in process by a lease's remembered denial, with no
// backing call, is an answer from memory (sluice.Result.Remembered): the
// refusal counts down, and a hit of the same call served from a lease is
// undecided, its tokens given back. A refusal the backing store made is
// not.
func TestDenialIsRemembered(t *testing.T) {
	back, clock := backing(t)
	// No memory of refusals: the lease's own denial answers.
	s := newStore(t, back, lease.Config{Clock: clock, Logger: quiet, SweepInterval: -1, MaxLease: 8, RememberRefusals: -1})
	h, other := hotHit("denied"), hotHit("other")
	for range 16 { // other's leases grow to 8 tokens: the last holds 7
		take(t, s, other)
	}
	var first sluice.Result
	for range 101 {
		if first = take(t, s, h)[0]; !first.Allowed {
			break
		}
	}
	if first.Allowed || first.Remembered {
		t.Fatalf("first refusal %+v: want refused by the backing store, not from memory", first)
	}
	calls := back.takes.Load()
	held := take(t, s, other)[0].Remaining // served from the lease: one token less
	out := take(t, s, h, other)
	if back.takes.Load() != calls {
		t.Fatalf("%d backing calls for a request the lease's denial refuses, want none", back.takes.Load()-calls)
	}
	if r := out[0]; r.Allowed || !r.Remembered || r.RetryAfter <= 0 {
		t.Fatalf("denied hit %+v: want refused from memory, with a RetryAfter", r)
	}
	if r := out[1]; !r.Allowed || !r.Remembered || r.Receipt != (sluice.Receipt{}) || r.Remaining != held {
		t.Fatalf("other hit %+v: want undecided (remembered, no receipt) with %d remaining", r, held)
	}
	if r := takeFromLease(t, s, back, other); r.Remaining != held-1 {
		t.Fatalf("other's next take leaves %d, want %d: the refused request consumed", r.Remaining, held-1)
	}
}
