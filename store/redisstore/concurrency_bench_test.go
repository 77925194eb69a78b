package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// BenchmarkConcurrencySlot measures what a concurrency rule costs a
// request against a real redis-server on loopback: a rate rule alone (one
// script call), the rate rule and a slot taken in the same call, and that
// call followed by the refund that frees the slot after the handler (two
// script calls).
func BenchmarkConcurrencySlot(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	s := newStoreWith(b, newClient(b, srv.Addr), nil, redisstore.Config{Coalesce: -1})
	rate := sluice.Hit{Key: "per-ip\x00ip\x00198.51.100.1", Limit: benchLimit, Cost: 1}
	slot := sluice.Hit{Key: "in-flight\x00ip\x00198.51.100.1", Limit: sluice.Per(1000, time.Minute), Algorithm: sluice.SlidingLog, Concurrency: true}
	for _, bc := range []struct {
		name string
		hits []sluice.Hit
		free bool
	}{
		{"rate", []sluice.Hit{rate}, false},
		{"rate+slot/taken", []sluice.Hit{rate, slot}, false},
		{"rate+slot/taken+freed", []sluice.Hit{rate, slot}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			out := make([]sluice.Result, len(bc.hits))
			refunds := make([]sluice.Refund, 1)
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Take(ctx, bc.hits, out); err != nil {
					b.Fatal(err)
				}
				if len(bc.hits) < 2 {
					continue
				}
				if !out[1].Allowed {
					b.Fatalf("slot refused: %+v", out[1])
				}
				refunds[0] = sluice.Refund{Hit: slot, Receipt: out[1].Receipt}
				if !bc.free {
					// Freed in the background of the measure: the slots
					// would run out otherwise.
					b.StopTimer()
				}
				if err := s.Refund(ctx, refunds); err != nil {
					b.Fatal(err)
				}
				if !bc.free {
					b.StartTimer()
				}
			}
		})
	}
}
