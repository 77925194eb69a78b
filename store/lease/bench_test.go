package lease_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/lease"
	"github.com/sluicehq/sluice/store/memstore"
)

// The local hit path allocates nothing.
func TestHitPathAllocatesNothing(t *testing.T) {
	back, clock := backing(t)
	s := newStore(t, back, lease.Config{Clock: clock, MaxLease: 1000, SweepInterval: -1})
	h := []sluice.Hit{{Key: "k", Limit: sluice.PerHour(1_000_000), Lease: leased}}
	out := make([]sluice.Result, 1)
	for range 600 { // K grows to 512: the lease then holds 423
		take(t, s, h...)
	}
	calls := back.takes.Load()
	allocs := testing.AllocsPerRun(100, func() {
		if err := s.Take(context.Background(), h, out); err != nil || !out[0].Allowed {
			t.Fatal(err, out[0])
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per local hit, want 0", allocs)
	}
	if back.takes.Load() != calls {
		t.Fatal("the measured hits went to the backing store: not the local path")
	}
}

// BenchmarkHotKey compares, in one run, the lease hit path with memstore
// on one hot key, in parallel; memstore runs twice (A and A2) as the
// noise control. The lease store wraps a memstore, so what it adds is the
// lease path itself. The bucket never runs dry within a run (a huge
// limit), so every lease hit is local after the first refills.
func BenchmarkHotKey(b *testing.B) {
	limit := sluice.PerSecond(1_000_000).WithBurst(1 << 40)
	mem := func(b *testing.B) sluice.Store {
		m := memstore.New(memstore.Config{SweepInterval: -1})
		b.Cleanup(func() { m.Close() })
		return m
	}
	for _, bc := range []struct {
		name  string
		store func(b *testing.B) sluice.Store
	}{
		{"memstore/A", mem},
		{"lease", func(b *testing.B) sluice.Store {
			s, err := lease.New(mem(b), lease.Config{MaxLease: 1 << 20, SweepInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close(context.Background()) })
			return s
		}},
		{"memstore/A2", mem},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := bc.store(b)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				hits := []sluice.Hit{{Key: "hot", Limit: limit, Lease: leased}}
				out := make([]sluice.Result, 1)
				for pb.Next() {
					if err := s.Take(context.Background(), hits, out); err != nil || !out[0].Allowed {
						b.Fatal(err, out[0])
					}
				}
			})
		})
	}
}
