package metrics_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
)

// BenchmarkObserve is the per-rule cost on the request path, after the
// rule's first observation.
func BenchmarkObserve(b *testing.B) {
	c, _ := newCollector(b, metrics.Config{})
	ctx := context.Background()
	rules := make([]string, 20)
	for i := range rules {
		rules[i] = fmt.Sprintf("rule-%d", i)
		c.Observe(ctx, sluice.Decision{Rule: rules[i]})
	}
	b.Run("one-rule", func(b *testing.B) {
		d := sluice.Decision{Rule: rules[3], Outcome: sluice.OutcomeAllowed, Latency: time.Millisecond}
		b.ReportAllocs()
		for b.Loop() {
			c.Observe(ctx, d)
		}
	})
	b.Run("twenty-rules", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			c.Observe(ctx, sluice.Decision{Rule: rules[i%len(rules)], Outcome: sluice.Outcome(i % 7)})
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				c.Observe(ctx, sluice.Decision{Rule: rules[i%len(rules)], Outcome: sluice.OutcomeDenied})
				i++
			}
		})
	})
}

// BenchmarkObserveStoreCall is the per-request cost of a store call.
func BenchmarkObserveStoreCall(b *testing.B) {
	c, _ := newCollector(b, metrics.Config{})
	ctx := context.Background()
	b.Run("ok", func(b *testing.B) {
		call := sluice.StoreCall{Latency: 400 * time.Microsecond, Hits: 2}
		b.ReportAllocs()
		for b.Loop() {
			c.ObserveStoreCall(ctx, call)
		}
	})
	b.Run("error", func(b *testing.B) {
		call := sluice.StoreCall{Latency: 50 * time.Millisecond, Hits: 2, Err: fmt.Errorf("take: %w",
			&sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrTimeout, Ambiguous: true, Err: context.DeadlineExceeded})}
		b.ReportAllocs()
		for b.Loop() {
			c.ObserveStoreCall(ctx, call)
		}
	})
}
