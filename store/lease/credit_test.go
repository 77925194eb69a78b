package lease_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/lease"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// exact is a memstore on the lease tests' clock: the bucket a lease store
// alone must answer as.
func exact(t *testing.T, clock *storetest.Clock) *memstore.Store {
	t.Helper()
	m := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1})
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

// alike takes h from the lease store s and from the exact store ref, and
// fails t unless both answer the same (receipts aside). It returns the
// two results.
func alike(t *testing.T, s, ref sluice.Store, h sluice.Hit) (got, want sluice.Result) {
	t.Helper()
	got = take(t, s, h)[0]
	h.Lease = nil
	want = take(t, ref, h)[0]
	g, w := got, want
	g.Receipt, w.Receipt, g.Remembered = sluice.Receipt{}, sluice.Receipt{}, false
	if g != w {
		t.Fatalf("got %+v, an exact bucket answers %+v", g, w)
	}
	return got, want
}

// A spent key (1,000/s, a burst of 10,000: it refills for 10 s) checked
// by one instance alone: the first check finds it dry, and the next
// ones, 20 ms later, are decided in process and owed. What is owed is
// taken from the backing store (settled) on Close, by the sweep once the
// model has expired, or lost with a crash: the bucket is then fuller by
// what was owed, at most half a lease.
func TestAloneSettles(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, s *lease.Store, clock *storetest.Clock)
		lost int64
	}{
		{"close", func(t *testing.T, s *lease.Store, _ *storetest.Clock) {
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		}, 0},
		{"sweep", func(t *testing.T, s *lease.Store, clock *storetest.Clock) {
			if err := s.Sweep(context.Background()); err != nil { // the model is live: nothing is settled
				t.Fatal(err)
			}
			clock.Advance(2 * time.Second) // the model expires
			if err := s.Sweep(context.Background()); err != nil {
				t.Fatal(err)
			}
		}, 0},
		{"crash", func(*testing.T, *lease.Store, *storetest.Clock) {}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			back, clock := backing(t)
			ref := exact(t, clock)
			s, err := lease.New(back, lease.Config{Clock: clock, Instances: 1, Logger: quiet, SweepInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			if tc.lost == 0 {
				t.Cleanup(func() { s.Close(context.Background()) })
			}
			limit := sluice.PerSecond(1000).WithBurst(10_000)
			h := sluice.Hit{Key: "alone", Limit: limit, Lease: leased}
			spend := sluice.Hit{Key: "alone", Limit: limit, Cost: limit.Capacity()}
			take(t, back, spend)
			take(t, ref, spend)
			if r, _ := alike(t, s, ref, h); r.Allowed {
				t.Fatal("admitted on a spent bucket")
			}
			clock.Advance(20 * time.Millisecond)
			calls := back.takes.Load()
			for range 10 {
				if r, _ := alike(t, s, ref, h); !r.Allowed {
					t.Fatal("refused with 20 tokens refilled")
				}
			}
			if n := back.takes.Load() - calls; n != 0 {
				t.Fatalf("%d backing calls for 10 checks decided in process", n)
			}
			tc.end(t, s, clock)
			if got, want := peek(t, back, h), peek(t, ref, h); got-want != tc.lost {
				t.Fatalf("the backing bucket holds %d, the exact one %d: want %d more", got, want, tc.lost)
			}
		})
	}
}

// A refund of checks decided in process gives their tokens back as a
// bucket decided exactly would: the answers stay the same, and after
// Close so do the buckets.
func TestAloneRefund(t *testing.T) {
	back, clock := backing(t)
	ref := exact(t, clock)
	s := newStore(t, back, lease.Config{Clock: clock, Instances: 1, Logger: quiet, SweepInterval: -1})
	limit := sluice.PerSecond(1000).WithBurst(10_000)
	h := sluice.Hit{Key: "alone", Limit: limit, Lease: leased}
	spend := sluice.Hit{Key: "alone", Limit: limit, Cost: limit.Capacity()}
	take(t, back, spend)
	take(t, ref, spend)
	alike(t, s, ref, h)
	clock.Advance(20 * time.Millisecond)
	var mine, theirs []sluice.Refund
	for range 10 {
		got, want := alike(t, s, ref, h)
		mine = append(mine, sluice.Refund{Hit: h, Receipt: got.Receipt})
		r := h
		r.Lease = nil
		theirs = append(theirs, sluice.Refund{Hit: r, Receipt: want.Receipt})
	}
	if err := s.Refund(context.Background(), mine[:4]); err != nil {
		t.Fatal(err)
	}
	if err := ref.Refund(context.Background(), theirs[:4]); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		alike(t, s, ref, h)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := peek(t, back, h), peek(t, ref, h); got != want {
		t.Fatalf("after Close the backing bucket holds %d, the exact one %d", got, want)
	}
}

// countedBacking counts its instances as told.
type countedBacking struct {
	*counting
	n atomic.Int64
}

func (c *countedBacking) Instances() int { return int(c.n.Load()) }

// When a second instance appears while checks decided in process are
// owed, the next check settles them before anything else: every token
// admitted is taken from the backing bucket exactly once.
func TestAloneThenShared(t *testing.T) {
	inner, clock := backing(t)
	back := &countedBacking{counting: inner}
	back.n.Store(1)
	ref := exact(t, clock)
	s := newStore(t, back, lease.Config{Clock: clock, Logger: quiet, SweepInterval: -1})
	limit := sluice.PerSecond(1000).WithBurst(10_000)
	h := sluice.Hit{Key: "k", Limit: limit, Lease: leased}
	spend := sluice.Hit{Key: "k", Limit: limit, Cost: limit.Capacity()}
	take(t, back, spend)
	take(t, ref, spend)
	admit := func() { // mirrors each admission on ref
		if take(t, s, h)[0].Allowed {
			f := h
			f.Lease, f.Force = nil, true
			take(t, ref, f)
		}
	}
	admit()
	clock.Advance(20 * time.Millisecond)
	for range 10 {
		admit()
	}
	if back.forced.Load() != 0 {
		t.Fatal("settled before the instance count changed")
	}
	back.n.Store(2)
	for range 30 {
		admit()
		clock.Advance(time.Millisecond)
	}
	if back.forced.Load() != 1 {
		t.Fatalf("%d forced hits (settles), want 1", back.forced.Load())
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := peek(t, back, h), peek(t, ref, h); got != want {
		t.Fatalf("after Close the backing bucket holds %d; with every admission taken once it holds %d", got, want)
	}
}
