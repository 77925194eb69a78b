package redisstore_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// healCounter is a sluice.StoreEvents that counts healed keys.
type healCounter struct{ healed atomic.Int64 }

func (*healCounter) BreakerChanged(string, sluice.BreakerState, sluice.BreakerState) {}
func (*healCounter) ScriptReloaded(string)                                           {}
func (h *healCounter) StateHealed(string)                                            { h.healed.Add(1) }

var _ sluice.StateHealedEvents = (*healCounter)(nil)

// logLines is a slog handler that keeps the messages it receives.
type logLines struct {
	mu   sync.Mutex
	msgs []string
}

func (*logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logLines) WithGroup(string) slog.Handler      { return l }

func (l *logLines) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if strings.Contains(m, substr) {
			n++
		}
	}
	return n
}

// corruptions put something that is not a bucket's state at key.
var corruptions = []struct {
	name string
	put  func(ctx context.Context, c *redis.Client, key string) error
}{
	{"a list", func(ctx context.Context, c *redis.Client, key string) error { return c.RPush(ctx, key, "x", "y").Err() }},
	{"a hash", func(ctx context.Context, c *redis.Client, key string) error {
		return c.HSet(ctx, key, "f", "garbage").Err()
	}},
	{"a string", func(ctx context.Context, c *redis.Client, key string) error {
		return c.Set(ctx, key, "not a state", 0).Err()
	}},
	{"a negative number", func(ctx context.Context, c *redis.Client, key string) error { return c.Set(ctx, key, "-42", 0).Err() }},
	{"a huge number", func(ctx context.Context, c *redis.Client, key string) error {
		return c.Set(ctx, key, "1e300", 0).Err()
	}},
	{"a sorted set with garbage", func(ctx context.Context, c *redis.Client, key string) error {
		return c.ZAdd(ctx, key, redis.Z{Score: float64(time.Now().UnixMicro()), Member: "garbage"}).Err()
	}},
}

var healAlgorithms = []sluice.Algorithm{sluice.TokenBucket, sluice.SlidingWindow, sluice.FixedWindow, sluice.SlidingLog}

// TestCorruptKeysHeal puts every corruption in the key of every algorithm,
// and checks, alone and in a request of two hits, for a take and for a
// peek: the check succeeds as on an empty bucket, the key then holds a
// bucket's state (or nothing, after a peek), and the heal is counted and
// logged once. The next check heals nothing.
func TestCorruptKeysHeal(t *testing.T) {
	t.Parallel() // its own redis-server; no package state, no timing
	srv := redistest.Start(t)
	admin := newClient(t, srv.Addr)
	ctx := context.Background()
	for _, form := range []string{"alone", "in a request", "peek"} {
		for _, alg := range healAlgorithms {
			for _, cr := range corruptions {
				t.Run(form+"/"+alg.String()+"/"+cr.name, func(t *testing.T) {
					events, logs := &healCounter{}, &logLines{}
					s, err := redisstore.New(newClient(t, srv.Addr), redisstore.Config{Secret: []byte("test secret"), Events: events, Logger: slog.New(logs), StartupCheckTimeout: -1})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { s.Close(context.Background()) })
					hit := sluice.Hit{Key: t.Name(), Limit: sluice.PerMinute(10), Algorithm: alg, Cost: 3}
					key := redisstore.KeyOf(s, hit)
					if err := cr.put(ctx, admin, key); err != nil {
						t.Fatal(err)
					}
					hits := []sluice.Hit{hit}
					switch form {
					case "in a request":
						hits = append(hits, sluice.Hit{Key: t.Name() + "/other", Limit: sluice.PerMinute(10), Cost: 1})
					case "peek":
						hits[0].Peek = true
					}
					out := make([]sluice.Result, len(hits))
					if err := s.Take(ctx, hits, out); err != nil {
						t.Fatalf("take on %s: %v", cr.name, err)
					}
					want := int64(7)
					if form == "peek" {
						want = 10
					}
					if !out[0].Allowed || out[0].Remaining != want {
						t.Fatalf("take on %s: %+v, want allowed with %d remaining", cr.name, out[0], want)
					}
					typ := admin.Type(ctx, key).Val()
					switch {
					case form == "peek" && typ != "none":
						t.Fatalf("after a peek the key holds a %s, want none", typ)
					case form != "peek" && alg == sluice.SlidingLog && typ != "zset",
						form != "peek" && alg != sluice.SlidingLog && typ != "string":
						t.Fatalf("the key holds a %s after the take", typ)
					}
					if got := events.healed.Load(); got != 1 {
						t.Fatalf("%d heals counted, want 1", got)
					}
					if got := logs.count("replaced"); got != 1 {
						t.Fatalf("%d heals logged, want 1", got)
					}
					if ttl := admin.PTTL(ctx, key).Val(); form != "peek" && ttl <= 0 {
						t.Fatalf("the healed key has TTL %v", ttl)
					}
					hits[0].Peek = false
					if err := s.Take(ctx, hits, out); err != nil {
						t.Fatal(err)
					}
					if got := events.healed.Load(); got != 1 {
						t.Fatalf("the next check counted a heal again: %d", got)
					}
					// Corrupted again: counted again, not logged again.
					if err := admin.Del(ctx, key).Err(); err != nil {
						t.Fatal(err)
					}
					if err := cr.put(ctx, admin, key); err != nil {
						t.Fatal(err)
					}
					if err := s.Take(ctx, hits, out); err != nil {
						t.Fatal(err)
					}
					if got, logged := events.healed.Load(), logs.count("replaced"); got != 2 || logged != 1 {
						t.Fatalf("a key corrupted twice: %d heals counted, %d logged; want 2 and 1", got, logged)
					}
				})
			}
		}
	}
}
