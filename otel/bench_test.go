package sluiceotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	sluiceotel "github.com/sluicehq/sluice/otel"
	"go.opentelemetry.io/otel/metric/noop"
)

// BenchmarkObserve measures one decision and one store call recorded, on
// the SDK with a manual reader and on the no-op provider, for a rule
// already seen.
func BenchmarkObserve(b *testing.B) {
	sdk, _ := newRecorder(b)
	nop, err := sluiceotel.New(noop.NewMeterProvider())
	if err != nil {
		b.Fatal(err)
	}
	d := sluice.Decision{Rule: "per-ip", Outcome: sluice.OutcomeAllowed}
	c := sluice.StoreCall{Latency: time.Millisecond, Hits: 1}
	for _, bc := range []struct {
		name string
		rec  *sluiceotel.Recorder
	}{{"sdk", sdk}, {"noop", nop}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			bc.rec.Observe(ctx, d)
			b.ReportAllocs()
			for b.Loop() {
				bc.rec.Observe(ctx, d)
				bc.rec.ObserveStoreCall(ctx, c)
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					bc.rec.Observe(ctx, d)
				}
			})
		})
	}
}
