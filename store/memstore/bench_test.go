package memstore_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/memstore"
)

// keys returns n distinct bucket keys shaped like the ones rules build.
func keys(n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = "per-ip\x00ip\x00198.51.100." + strconv.Itoa(i)
	}
	return ks
}

// A limit high enough that the benchmark measures admitting, not refusing.
var benchLimit = sluice.PerSecond(1_000_000).WithBurst(1 << 30)

func BenchmarkTake(b *testing.B) {
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		keys int
	}{{"hot key", 1}, {"10k keys", 10_000}} {
		ks := keys(bc.keys)
		b.Run("sequential/"+bc.name, func(b *testing.B) {
			s := memstore.New(memstore.Config{})
			defer s.Close(context.Background())
			hits := []sluice.Hit{{Limit: benchLimit, Cost: 1}}
			out := make([]sluice.Result, 1)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				hits[0].Key = ks[i%len(ks)]
				i++
				if err := s.Take(ctx, hits, out); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("parallel/"+bc.name, func(b *testing.B) {
			s := memstore.New(memstore.Config{})
			defer s.Close(context.Background())
			var seq atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				// A spare element on either side keeps the goroutines'
				// hits, written on every call, off each other's cache lines.
				hits := make([]sluice.Hit, 3)[1:2]
				hits[0] = sluice.Hit{Limit: benchLimit, Cost: 1}
				out := make([]sluice.Result, 3)[1:2]
				i := int(seq.Add(7919))
				for pb.Next() {
					hits[0].Key = ks[i%len(ks)]
					i++
					if err := s.Take(ctx, hits, out); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
	b.Run("sequential/4 rules", func(b *testing.B) {
		s := memstore.New(memstore.Config{})
		defer s.Close(context.Background())
		ks := keys(4)
		hits := make([]sluice.Hit, 4)
		for i := range hits {
			hits[i] = sluice.Hit{Key: ks[i], Limit: benchLimit, Cost: 1}
		}
		out := make([]sluice.Result, 4)
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Take(ctx, hits, out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTakeAtBound measures a flood of new keys into a full store:
// every call creates a bucket, and makes room for it by eviction (see
// memstore.Config.MaxBuckets), against the same flood into a store with no
// bound, whose map grows instead.
func BenchmarkTakeAtBound(b *testing.B) {
	ctx := context.Background()
	ks := keys(200_000)
	for _, bc := range []struct {
		name string
		max  int
	}{{"bound 10k", 10_000}, {"no bound", -1}} {
		b.Run(bc.name, func(b *testing.B) {
			s := memstore.New(memstore.Config{SweepInterval: -1, MaxBuckets: bc.max})
			defer func() { s.Close(context.Background()) }()
			hits := []sluice.Hit{{Limit: sluice.PerHour(100), Cost: 1}}
			out := make([]sluice.Result, 1)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				hits[0].Key = ks[i%len(ks)]
				i++
				if i%len(ks) == 0 && bc.max < 0 {
					b.StopTimer() // a new store: keep measuring creation, not lookups
					s.Close(context.Background())
					s = memstore.New(memstore.Config{SweepInterval: -1, MaxBuckets: bc.max})
					b.StartTimer()
				}
				if err := s.Take(ctx, hits, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
