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

func BenchmarkAppendRequest(b *testing.B) {
	s := &Store{keys: newKeyer(defaultPrefix, []byte("bench secret"))}
	hits := []sluice.Hit{{Key: "6:per-ip2:ip198.51.100.77", Limit: sluice.PerSecond(10), Cost: 1}}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = s.appendRequest(nil, []any{s.clockArg(), 1, len(hits)}, hits)
	}
}
