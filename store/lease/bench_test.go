package lease_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/lease"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/redisstore"
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

// A check refused from the memory of refusals allocates nothing, counted
// toward its key's hotness included, through Take and TakeLocal.
func TestRememberedRefusalAllocatesNothing(t *testing.T) {
	back, clock := backing(t) // not in process: refusals are remembered
	rec := newRecorder()
	pol := &sluice.LeasePolicy{Rule: "flood", HotKeys: sluice.HotKeyPolicy{Threshold: 5, Split: 4}}
	s := newStore(t, back, lease.Config{Clock: clock, Observer: rec, Logger: quiet, SweepInterval: -1})
	h := []sluice.Hit{{Key: "k", Limit: sluice.PerSecond(10), Algorithm: sluice.FixedWindow, Lease: pol}}
	out := make([]sluice.Result, 1)
	for range 20 {
		take(t, s, h...)
	}
	if rec.hot["split"] != 1 {
		t.Fatalf("%d keys turned hot, want 1", rec.hot["split"])
	}
	calls := back.takes.Load()
	for name, f := range map[string]func(){
		"Take": func() {
			if err := s.Take(context.Background(), h, out); err != nil || !out[0].Remembered {
				t.Fatal(err, out[0])
			}
		},
		"TakeLocal": func() {
			if !s.TakeLocal(h, out) || !out[0].Remembered {
				t.Fatal(out[0])
			}
		},
	} {
		if allocs := testing.AllocsPerRun(100, f); allocs != 0 {
			t.Errorf("%s: %v allocations per remembered refusal, want 0", name, allocs)
		}
	}
	if back.takes.Load() != calls {
		t.Fatal("the measured checks went to the backing store: not remembered")
	}
}

// BenchmarkHotKey compares, in one run, the lease hit path with memstore
// on one hot key, in parallel; memstore runs twice (A and A2) as the
// noise control. The lease store runs over a memstore and over a real
// Redis (started for the benchmark), beside the Redis store alone (a
// script per check); both report Redis scripts per check (INFO
// commandstats). The bucket never runs dry within
// a run (a huge burst), so every lease hit is local after the refills.
func BenchmarkHotKey(b *testing.B) {
	limit := sluice.PerSecond(1_000_000).WithBurst(1 << 40)
	srv := redistest.Start(b)
	mem := func(b *testing.B) sluice.Store {
		m := memstore.New(memstore.Config{SweepInterval: -1})
		b.Cleanup(func() { m.Close(context.Background()) })
		return m
	}
	leaseOver := func(back sluice.Store) func(b *testing.B) sluice.Store {
		return func(b *testing.B) sluice.Store {
			s, err := lease.New(back, lease.Config{MaxLease: 4096, SweepInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close(context.Background()) })
			return s
		}
	}
	for _, bc := range []struct {
		name  string
		store func(b *testing.B) sluice.Store
		redis bool
	}{
		{"memstore/A", mem, false},
		{"lease/memstore", func(b *testing.B) sluice.Store { return leaseOver(mem(b))(b) }, false},
		{"lease/redis", func(b *testing.B) sluice.Store { return leaseOver(redisStore(b, srv.Addr, nil))(b) }, true},
		{"redis", func(b *testing.B) sluice.Store { return redisStore(b, srv.Addr, nil) }, true}, // a script per check
		{"memstore/A2", mem, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := bc.store(b)
			key := fmt.Sprint("hot-", b.N) // a fresh bucket for each run
			var before int64
			if bc.redis {
				before = evalCalls(b, srv.Addr)
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				hits := []sluice.Hit{{Key: key, Limit: limit, Lease: leased}}
				out := make([]sluice.Result, 1)
				for pb.Next() {
					if err := s.Take(context.Background(), hits, out); err != nil || !out[0].Allowed {
						b.Fatal(err, out[0])
					}
				}
			})
			if bc.redis {
				b.ReportMetric(float64(evalCalls(b, srv.Addr)-before)/float64(b.N), "scripts/op")
			}
		})
	}
}

// BenchmarkOverLimit floods one key far over its limit (100/s), in
// parallel, and reports the Redis scripts each offered check costs (INFO
// commandstats), in one run: the Redis store alone with its memory of
// refusals off (a script per check) and on (its default), and the lease
// store over the Redis store, whose own memory of refusals and lease
// denials answer in process, leasing the key or detecting it hot and
// splitting it. scripts/s is the same count per second of the run: what a
// flood costs Redis whatever its rate.
func BenchmarkOverLimit(b *testing.B) {
	srv := redistest.Start(b)
	limit := sluice.PerSecond(100)
	leaseOver := func(b *testing.B) sluice.Store {
		s, err := lease.New(redisStore(b, srv.Addr, nil), lease.Config{Logger: quiet, SweepInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close(context.Background()) })
		return s
	}
	split := &sluice.LeasePolicy{Rule: "split", HotKeys: sluice.HotKeyPolicy{Threshold: 1000, Split: 4}}
	for _, bc := range []struct {
		name  string
		store func(b *testing.B) sluice.Store
		pol   *sluice.LeasePolicy
	}{
		{"redis/remember-off", func(b *testing.B) sluice.Store { return redisStore(b, srv.Addr, nil) }, nil},
		{"redis/remember-1s", func(b *testing.B) sluice.Store {
			s, err := redisstore.New(redisClient(b, srv.Addr), redisstore.Config{Logger: quiet, Secret: []byte("test secret"), PresenceInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close(context.Background()) })
			return s
		}, nil},
		{"lease/redis", leaseOver, leased},
		{"lease/redis/hot-split", leaseOver, split},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := bc.store(b)
			key := fmt.Sprint("flooded-", bc.name, "-", b.N) // a fresh bucket for each run
			spend := []sluice.Hit{{Key: key, Limit: limit, Cost: limit.Capacity()}}
			if err := s.Take(context.Background(), spend, make([]sluice.Result, 1)); err != nil {
				b.Fatal(err)
			}
			before := evalCalls(b, srv.Addr)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				hits := []sluice.Hit{{Key: key, Limit: limit, Lease: bc.pol}}
				out := make([]sluice.Result, 1)
				for pb.Next() {
					if err := s.Take(context.Background(), hits, out); err != nil {
						b.Fatal(err)
					}
				}
			})
			scripts := float64(evalCalls(b, srv.Addr) - before)
			b.ReportMetric(scripts/float64(b.N), "scripts/op")
			b.ReportMetric(scripts/b.Elapsed().Seconds(), "scripts/s")
		})
	}
}
