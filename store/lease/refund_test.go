package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/lease"
)

// Refunds of hits served from leases go back into the lease the key holds
// as long as the lease chain they came from is unbroken, even across
// refills; a refund that cannot be honoured is counted as lost.
func TestRefundAcrossRefills(t *testing.T) {
	back, clock := backing(t)
	rec := newRecorder()
	s := newStore(t, back, lease.Config{Clock: clock, Observer: rec, Logger: quiet, SweepInterval: -1, MaxLease: 8})
	h := hotHit("busy")
	var refunds []sluice.Refund
	for range 100 {
		r := take(t, s, h)[0]
		if !r.Allowed {
			t.Fatal("refused under the limit")
		}
		refunds = append(refunds, sluice.Refund{Hit: h, Receipt: r.Receipt})
	}
	if got := peek(t, s, h); got != 0 {
		t.Fatalf("remaining after 100 takes: %d, want 0", got)
	}
	if err := s.Refund(context.Background(), refunds[:60]); err != nil {
		t.Fatal(err)
	}
	if got := peek(t, s, h); got != 60 {
		t.Fatalf("remaining after refunding 60: %d, want 60 (lost %d)", got, rec.lost)
	}
	if rec.lost != 0 {
		t.Fatalf("lost %d, want 0", rec.lost)
	}
	// Once the lease has expired and gone back, a late refund does
	// nothing, and is counted.
	clock.Advance(10 * time.Second)
	if err := s.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := rec.lost
	if err := s.Refund(context.Background(), refunds[60:70]); err != nil {
		t.Fatal(err)
	}
	if got := rec.lost - before; got != 10 {
		t.Fatalf("a late refund of 10: %d counted lost, want 10", got)
	}
}

// A refund clears a remembered denial: what Peek says passes, Take admits.
func TestRefundClearsDenial(t *testing.T) {
	back, clock := backing(t)
	s := newStore(t, back, lease.Config{Clock: clock, Logger: quiet, SweepInterval: -1, MaxLease: 8})
	h := hotHit("denied")
	// The first hit takes exactly its cost from the backing store: its
	// refund goes there.
	first := take(t, s, h)[0]
	for range 99 {
		take(t, s, h)
	}
	if r := take(t, s, h)[0]; r.Allowed {
		t.Fatal("admitted over the limit")
	}
	if err := s.Refund(context.Background(), []sluice.Refund{{Hit: h, Receipt: first.Receipt}}); err != nil {
		t.Fatal(err)
	}
	p := h
	p.Peek = true
	if r := take(t, s, p)[0]; !r.Allowed {
		t.Fatalf("peek after a refund: refused (remaining %d)", r.Remaining)
	}
	if r := take(t, s, h)[0]; !r.Allowed {
		t.Fatalf("take after a refund: refused, retry after %v", r.RetryAfter)
	}
}

// Refunds the backing store fails to take are counted, whether they
// return a lease's unused tokens or pass a caller's refund through.
func TestFailedRefundsCounted(t *testing.T) {
	back, clock := backing(t)
	rec := newRecorder()
	s, err := lease.New(back, lease.Config{Clock: clock, Observer: rec, Logger: quiet, SweepInterval: -1, MaxLease: 8})
	if err != nil {
		t.Fatal(err)
	}
	h := hotHit("k")
	first := take(t, s, h)[0] // exactly its cost from the backing store
	for range 3 {
		take(t, s, h) // a lease with tokens left
	}
	back.down.Store(true)
	if err := s.Refund(context.Background(), []sluice.Refund{{Hit: h, Receipt: first.Receipt}}); err == nil {
		t.Fatal("a refund to a store that is down succeeded")
	}
	if rec.refundFailures != 1 {
		t.Fatalf("%d refund failures counted after a failed pass-through, want 1", rec.refundFailures)
	}
	if err := s.Close(context.Background()); err == nil {
		t.Fatal("Close gave leases back to a store that is down")
	}
	if rec.refundFailures < 2 || rec.lost == 0 {
		t.Fatalf("after Close: %d refund failures, %d tokens lost; want ≥ 2 and > 0", rec.refundFailures, rec.lost)
	}
}

// A receipt of a hit served from a lease gives its tokens back once: a
// second refund of it, or a refund beyond what it took (whatever its Taken
// says), gives back nothing more.
func TestRefundGivesBackOnce(t *testing.T) {
	type refund struct{ units, taken int64 } // taken: Receipt.Taken as handed back, 0 for the real one
	for _, tc := range []struct {
		name    string
		cost    int64
		refunds []refund
		oneCall bool // all refunds in one Refund call
		want    int64
	}{
		{"once", 2, []refund{{}}, false, 2},
		{"twice", 2, []refund{{}, {}}, false, 2},
		{"twice in one call", 2, []refund{{}, {}}, true, 2},
		{"three times", 1, []refund{{}, {}, {}}, false, 1},
		{"part, then all", 3, []refund{{units: 1}, {}}, false, 3},
		{"two parts within the take", 3, []refund{{units: 1}, {units: 1}}, false, 2},
		{"two parts beyond the take", 3, []refund{{units: 2}, {units: 2}}, false, 3},
		{"two parts beyond the take in one call", 3, []refund{{units: 2}, {units: 2}}, true, 3},
		{"taken inflated", 1, []refund{{taken: 50}}, false, 1},
		{"taken inflated, units beyond the take", 2, []refund{{units: 40, taken: 50}}, false, 2},
		{"taken inflated, twice", 2, []refund{{taken: 50}, {taken: 50}}, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			back, clock := backing(t)
			rec := newRecorder()
			s := newStore(t, back, lease.Config{Clock: clock, Observer: rec, Logger: quiet, SweepInterval: -1, MaxLease: 8})
			h := hotHit("once")
			for range 10 { // a lease of the key, K grown
				take(t, s, h)
			}
			h.Cost = tc.cost
			var r sluice.Result
			for range 10 { // a hit served from the lease, not from the backing store
				calls := back.takes.Load()
				if r = take(t, s, h)[0]; back.takes.Load() == calls {
					break
				}
			}
			if !r.Allowed || r.Receipt.Taken != tc.cost {
				t.Fatalf("the hit: %+v, want allowed with a receipt of %d", r, tc.cost)
			}
			before := peek(t, s, h)
			var refunds []sluice.Refund
			for _, rf := range tc.refunds {
				rc := r.Receipt
				if rf.taken != 0 {
					rc.Taken = rf.taken
				}
				refunds = append(refunds, sluice.Refund{Hit: h, Receipt: rc, Units: rf.units})
			}
			calls := [][]sluice.Refund{refunds}
			if !tc.oneCall {
				calls = calls[:0]
				for i := range refunds {
					calls = append(calls, refunds[i:i+1])
				}
			}
			for _, c := range calls {
				if err := s.Refund(context.Background(), c); err != nil {
					t.Fatal(err)
				}
			}
			if got := peek(t, s, h) - before; got != tc.want {
				t.Fatalf("the refunds gave back %d of a take of %d, want %d", got, tc.cost, tc.want)
			}
			if rec.lost != 0 {
				t.Fatalf("%d tokens counted lost, want 0", rec.lost)
			}
		})
	}
}

// A refund of a hit served more tokens ago than a lease store can tell
// apart gives back nothing, and counts the tokens as lost; refunds of the
// latest hits give back every token once, including those whose places
// in the store's record were used by tokens given back before.
func TestRefundOfLongAgoIsLost(t *testing.T) {
	back, clock := backing(t)
	rec := newRecorder()
	s := newStore(t, back, lease.Config{Clock: clock, Observer: rec, Logger: quiet, SweepInterval: -1, MaxLease: 64})
	h := sluice.Hit{Key: "long-ago", Limit: sluice.PerHour(1_000_000), Lease: leased}
	first := takeFromLease(t, s, back, h)
	refundAll := func(rs ...sluice.Result) {
		t.Helper()
		refunds := make([]sluice.Refund, len(rs))
		for i, r := range rs {
			refunds[i] = sluice.Refund{Hit: h, Receipt: r.Receipt}
		}
		if err := s.Refund(context.Background(), refunds); err != nil {
			t.Fatal(err)
		}
	}
	refundAll(first)
	second := take(t, s, h)[0]
	var latest []sluice.Result
	for i := range 2000 {
		if r := take(t, s, h)[0]; i >= 1000 {
			latest = append(latest, r)
		}
	}
	before := peek(t, s, h)
	refundAll(second)
	refundAll(latest...)
	if got := peek(t, s, h) - before; got != 1000 {
		t.Fatalf("refunds of a hit 2,000 tokens ago and of the latest 1,000 gave back %d, want 1,000", got)
	}
	if rec.lost != 1 {
		t.Fatalf("%d tokens counted lost, want 1", rec.lost)
	}
}

// A receipt of a lease of a key the store has since forgotten gives back
// nothing in the key's later leases, and counts its tokens as lost.
func TestRefundOfForgottenLease(t *testing.T) {
	back, clock := backing(t)
	rec := newRecorder()
	s := newStore(t, back, lease.Config{Clock: clock, Observer: rec, Logger: quiet, SweepInterval: -1, MaxLease: 8})
	h := hotHit("forgotten")
	old := takeFromLease(t, s, back, h)
	for range 2 { // the lease goes back, then the key is forgotten
		clock.Advance(3 * time.Second)
		if err := s.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.Len(); n != 0 {
		t.Fatalf("%d keys hold lease state after two expiries, want 0", n)
	}
	for range 30 { // the key's leases anew
		take(t, s, h)
	}
	before, lost := peek(t, s, h), rec.lost
	if err := s.Refund(context.Background(), []sluice.Refund{{Hit: h, Receipt: old.Receipt}}); err != nil {
		t.Fatal(err)
	}
	if got := peek(t, s, h) - before; got != 0 {
		t.Fatalf("a receipt of a forgotten lease gave back %d, want 0", got)
	}
	if got := rec.lost - lost; got != 1 {
		t.Fatalf("%d tokens counted lost, want 1", got)
	}
}
