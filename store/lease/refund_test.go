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
	if err := s.Expire(context.Background()); err != nil {
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
	if rec.refundFailures < 2 || rec.lost == 0 || s.FailedRefunds() != int64(rec.refundFailures) {
		t.Fatalf("after Close: %d refund failures (store: %d), %d tokens lost; want ≥ 2, equal, and > 0",
			rec.refundFailures, s.FailedRefunds(), rec.lost)
	}
}
