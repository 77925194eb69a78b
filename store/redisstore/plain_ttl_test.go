package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// A request of several token-bucket rules, decided by the server's clock,
// gives each bucket it consumed a TTL until it is full again, and at least
// a second: the path of plain token-bucket requests sets it as an
// absolute time.
func TestTTLOfARequestOfSeveralRules(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr)
	s := newStore(t, c, nil)
	hits := []sluice.Hit{
		{Key: "slow", Limit: sluice.PerSecond(10).WithBurst(100), Cost: 25}, // full again in 2.5 s
		{Key: "fast", Limit: sluice.PerSecond(1000), Cost: 1},               // in 1 ms
		{Key: "slow", Limit: sluice.PerSecond(10).WithBurst(100), Cost: 5},  // 3 s in all
	}
	out := make([]sluice.Result, len(hits))
	if err := s.Take(context.Background(), hits, out); err != nil {
		t.Fatal(err)
	}
	if !sluice.Admitted(hits, out) {
		t.Fatalf("refused: %+v", out)
	}
	for _, tc := range []struct {
		hit      sluice.Hit
		min, max time.Duration
	}{{hits[0], 2900 * time.Millisecond, 3000 * time.Millisecond}, {hits[1], 900 * time.Millisecond, time.Second}} {
		if ttl := c.PTTL(context.Background(), redisstore.KeyOf(s, tc.hit)).Val(); ttl < tc.min || ttl > tc.max {
			t.Errorf("%s: TTL %v, want %v to %v", tc.hit.Key, ttl, tc.min, tc.max)
		}
	}
}
