package redisstore

import (
	"testing"

	"github.com/sluicehq/sluice"
)

func BenchmarkKey(b *testing.B) {
	k := newKeyer(defaultPrefix, []byte("bench secret"))
	h := sluice.Hit{Key: "6:per-ip2:ip198.51.100.77", Limit: sluice.PerSecond(10)}
	b.ReportAllocs()
	for b.Loop() {
		_ = k.key(&h)
	}
}

// BenchmarkCommand measures building a script command: keys, arguments,
// the slice go-redis sends, for one request of one or four hits.
func BenchmarkCommand(b *testing.B) {
	s := &decider{keys: newKeyer(defaultPrefix, []byte("bench secret"))}
	hit := sluice.Hit{Key: "6:per-ip2:ip198.51.100.77", Limit: sluice.PerSecond(10), Cost: 1}
	window := hit
	window.Algorithm = sluice.SlidingWindow
	for _, bc := range []struct {
		name string
		hits []sluice.Hit
	}{
		{"token bucket", []sluice.Hit{hit}},
		{"4 token buckets", []sluice.Hit{hit, hit, hit, hit}},
		{"4 sliding windows", []sluice.Hit{window, window, window, window}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			out := make([]sluice.Result, len(bc.hits))
			b.ReportAllocs()
			for b.Loop() {
				r := s.newRequest(bc.hits, out)
				_ = takeCommand([]*request{&r})
			}
		})
	}
}
