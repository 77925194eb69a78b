package lease_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/lease"
)

// A call answered from the memory of refusals reports, for its other hits,
// what the store knows of their buckets with no backing call: a leased
// key's from its lease (served in process since its last refill, below
// what the store last answered for it), a key that passes through from
// what the store last answered, counted forward; and ClaimBucket hands
// the same to a local fallback once.
func TestRememberedCallReportsKnown(t *testing.T) {
	back, clock := backing(t) // not in process: refusals are remembered
	s := newStore(t, back, lease.Config{Clock: clock, Logger: quiet, SweepInterval: -1})
	leasedHit := sluice.Hit{Key: "leased", Limit: sluice.PerHour(1000), Lease: leased}
	plain := sluice.Hit{Key: "plain", Limit: sluice.PerHour(100)} // passes through
	spent := sluice.Hit{Key: "spent", Limit: sluice.PerHour(2)}
	for range 10 { // K grows: the lease holds tokens
		take(t, s, leasedHit)
	}
	last := takeFromLease(t, s, back, leasedHit) // served in process: after the last refill's answer
	plainLast := take(t, s, plain)[0]
	take(t, s, spent)
	take(t, s, spent)
	if r := take(t, s, spent)[0]; r.Allowed {
		t.Fatal("the third take of a bucket of 2 was admitted")
	}

	calls := back.takes.Load()
	out := take(t, s, leasedHit, plain, spent)
	if back.takes.Load() != calls {
		t.Fatal("the call went to the backing store: not answered from memory")
	}
	for i, want := range []struct {
		name      string
		allowed   bool
		remaining int64
	}{
		{"leased", true, last.Remaining},
		{"plain", true, plainLast.Remaining},
		{"spent", false, 0},
	} {
		r := out[i]
		if !r.Remembered || r.Allowed != want.allowed || r.Remaining != want.remaining {
			t.Errorf("%s: %+v, want remembered, allowed %v, remaining %d", want.name, r, want.allowed, want.remaining)
		}
	}
	if out[0].ResetAfter <= 0 || out[1].ResetAfter <= 0 {
		t.Errorf("reset after %v and %v, want what is left of the buckets' reset", out[0].ResetAfter, out[1].ResetAfter)
	}

	// The local fallback's seed: the same, once.
	for _, h := range []sluice.Hit{leasedHit, plain} {
		st, ok := s.ClaimBucket(&h)
		if want := out[0].Remaining; h.Key == "plain" {
			want = out[1].Remaining
			if !ok || st.Remaining != want || st.Refused {
				t.Errorf("%s: claimed %+v %v, want remaining %d", h.Key, st, ok, want)
			}
		} else if !ok || st.Remaining != want {
			t.Errorf("%s: claimed %+v %v, want remaining %d", h.Key, st, ok, want)
		}
		if _, again := s.ClaimBucket(&h); again {
			t.Errorf("%s: claimed twice", h.Key)
		}
	}
	if st, ok := s.ClaimBucket(&spent); !ok || !st.Refused || st.RetryAfter <= 0 {
		t.Errorf("spent: claimed %+v %v, want the refusal", st, ok)
	}
}

// The local fallback of a decider on a lease store starts a bucket from
// the lease store's record: a client refused just before the backing
// store failed gets what refilled since (one token), not a fresh share.
func TestLocalFallbackStartsFromLeaseRecord(t *testing.T) {
	back, clock := backing(t)
	s := newStore(t, back, lease.Config{Clock: clock, Logger: quiet, SweepInterval: -1})
	dc, err := decide.New(s, decide.WithInstances(1), decide.WithClock(clock), decide.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	set := rules.MustNew(rules.Rule{Name: "leased", Key: keyfunc.Global(), Limit: sluice.PerMinute(10), Lease: sluice.LeasePolicy{Enabled: true}})
	check := func(n int) (admitted int) {
		for range n {
			d := dc.Check(set, httptest.NewRequest("GET", "/", nil), nil)
			if d.Verdict == decide.Admitted {
				admitted++
			}
			d.Finish(context.Background(), 0)
		}
		return admitted
	}
	if got := check(12); got != 10 {
		t.Fatalf("admitted %d of 12 at 10 a minute, want 10", got)
	}
	back.down.Store(true)
	clock.Advance(6 * time.Second) // one token refilled: the refusal no longer stands
	if got := check(10); got != 1 {
		t.Fatalf("with the store down, the local fallback admitted %d of 10, want the 1 refilled since the refusal (10 from a fresh share)", got)
	}
}
