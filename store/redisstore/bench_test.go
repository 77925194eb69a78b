package redisstore_test

import (
	"context"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

var benchLimit = sluice.PerSecond(1_000_000).WithBurst(1 << 30)

func benchKeys(n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = "per-ip\x00ip\x00198.51.100." + strconv.Itoa(i)
	}
	return ks
}

// BenchmarkTake measures one decision per call against a real redis-server
// on loopback: one rule and four rules in one script call, with and
// without coalescing, and parallel callers on one hot key and on 10k keys.
func BenchmarkTake(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	for _, bc := range []struct {
		name     string
		rules    int
		coalesce bool
	}{
		{"1 rules", 1, false}, {"4 rules", 4, false},
		{"1 rules/coalesced", 1, true}, {"4 rules/coalesced", 4, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var s *redisstore.Store
			if bc.coalesce { // one caller: every call finds a lane free
				s = newCoalescingStore(b, newClient(b, srv.Addr), nil)
			} else {
				s = newStoreWith(b, newClient(b, srv.Addr), nil, redisstore.Config{Coalesce: -1})
			}
			n := bc.rules
			ks := benchKeys(n)
			hits := make([]sluice.Hit, n)
			for i := range hits {
				hits[i] = sluice.Hit{Key: ks[i], Limit: benchLimit, Cost: 1}
			}
			out := make([]sluice.Result, n)
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Take(ctx, hits, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, bc := range []struct {
		name     string
		keys     int
		coalesce bool
	}{
		{"parallel/hot key", 1, false}, {"parallel/10k keys", 10_000, false},
		{"parallel/hot key/coalesced", 1, true}, {"parallel/10k keys/coalesced", 10_000, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := newStoreWith(b, newClient(b, srv.Addr), nil, redisstore.Config{Coalesce: -1})
			if bc.coalesce {
				s = newCoalescingStore(b, newClient(b, srv.Addr), nil)
			}
			takeInParallel(b, s, benchKeys(bc.keys), sluice.Hit{Limit: benchLimit, Cost: 1})
		})
	}
}

// takeInParallel runs b's checks from 64 goroutines (on 2 cores), each a
// request of hits whose first hit's key goes round keys, every goroutine
// from its own place.
func takeInParallel(b *testing.B, s *redisstore.Store, keys []string, hits ...sluice.Hit) {
	var seq atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		hits := slices.Clone(hits)
		out := make([]sluice.Result, len(hits))
		i := int(seq.Add(7919))
		for pb.Next() {
			hits[0].Key = keys[i%len(keys)]
			i++
			if err := s.Take(context.Background(), hits, out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
