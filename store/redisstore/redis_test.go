package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/algo"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// nonAtomicStore is a deliberately broken store: it reads the bucket, decides
// in Go and writes back in a second command, so concurrent callers read the
// same state. TestContentionCatchesNonAtomicStore shows the contention test
// catches it.
type nonAtomicStore struct {
	c   *redis.Client
	now func() int64
}

func (s nonAtomicStore) Take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	h := hits[0]
	tat, err := s.c.Get(ctx, h.Key).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	o, next := algo.TokenBucket(s.now(), tat, h.Limit.IntervalMicros(), h.Limit.Capacity(), h.Cost, false)
	if o.Allowed {
		if err := s.c.Set(ctx, h.Key, next, time.Hour).Err(); err != nil {
			return err
		}
	}
	o.Result(&out[0], h.Limit, o.Allowed)
	return nil
}

func TestContentionCatchesNonAtomicStore(t *testing.T) {
	srv := redistest.Start(t)
	now := time.Now().UnixMicro()
	stores := make([]sluice.Store, storetest.Clients)
	for i := range stores {
		stores[i] = nonAtomicStore{c: newClient(t, srv.Addr), now: func() int64 { return now }}
	}
	hit := sluice.Hit{Key: "hot", Limit: sluice.PerHour(1).WithBurst(storetest.Capacity), Cost: 1}
	admitted := storetest.CountAdmitted(t, stores, hit)
	t.Logf("non-atomic GET/SET store admitted %d of capacity %d", admitted, storetest.Capacity)
	if admitted <= storetest.Capacity {
		t.Fatalf("the non-atomic store admitted %d; the contention test could not tell it from an atomic one", admitted)
	}
}

func TestScriptFlushIsReloadedTransparently(t *testing.T) {
	t.Parallel() // its own redis-server; no package state, no timing
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr)
	s := newStore(t, c, nil)
	ctx := context.Background()
	hit := sluice.Hit{Key: "k", Limit: sluice.PerMinute(5), Cost: 1}
	out := make([]sluice.Result, 1)
	if err := s.Take(ctx, []sluice.Hit{hit}, out); err != nil || out[0].Remaining != 4 {
		t.Fatalf("first: %+v %v", out[0], err)
	}
	redisstore.WaitStartupCheck(s) // its SCRIPT LOAD must not land after the flush
	waitConnsReady(t, s)
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	reloads := s.ScriptReloads()
	calls := commandCalls(t, c, "evalsha") + commandCalls(t, c, "eval")
	if err := s.Take(ctx, []sluice.Hit{hit}, out); err != nil || !out[0].Allowed || out[0].Remaining != 3 {
		t.Fatalf("after SCRIPT FLUSH: %+v %v, want allowed with 3 remaining", out[0], err)
	}
	if got := s.ScriptReloads() - reloads; got != 1 {
		t.Fatalf("script reloads = %d, want 1", got)
	}
	// One EVALSHA that found no script, one EVAL: one extra round trip.
	if got := commandCalls(t, c, "evalsha") + commandCalls(t, c, "eval") - calls; got != 2 {
		t.Fatalf("script commands for one decision after a flush = %d, want 2", got)
	}
}

func TestRestartedRedisDecidesWithoutError(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, newClient(t, srv.Addr), nil)
	hit := sluice.Hit{Key: "k", Limit: sluice.PerMinute(5), Cost: 2}
	out := make([]sluice.Result, 1)
	ctx := context.Background()
	if err := s.Take(ctx, []sluice.Hit{hit}, out); err != nil {
		t.Fatal(err)
	}
	// Every connection set up first: one still being set up when the
	// server goes would fail, and calls would fail at once until it is
	// retried, each counted by the breaker (Redis was down).
	waitConnsReady(t, s)
	srv.Restart() // scripts and data gone
	// The pooled connection died with the old server; its failure is
	// reported, unambiguous or not, and never as a decision.
	// Until the store has connections to the new server, calls fail at
	// once; they are retried here for up to a ceiling against hangs.
	var err error
	for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(10 * time.Millisecond) {
		if err = s.Take(ctx, []sluice.Hit{hit}, out); err == nil {
			break
		}
		if !errors.Is(err, sluice.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
	}
	if err != nil || !out[0].Allowed || out[0].Remaining != 3 {
		t.Fatalf("after restart: %+v %v, want a fresh bucket with 3 remaining", out[0], err)
	}
}

func TestKeysHideIdentitiesAndExpire(t *testing.T) {
	t.Parallel() // its own redis-server; no package state, no timing
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr)
	s := newStore(t, c, nil)
	ctx := context.Background()
	secrets := []string{"203.0.113.7", "2001:db8::1", "sk_live_abcdefghijklmnop", strings.Repeat("A", 1<<20), "{tag}\r\n\x00\xff"}
	for _, id := range secrets {
		for _, cost := range []int64{1, 5} {
			hit := sluice.Hit{Key: "per-ip\x00" + id, Limit: sluice.PerHour(10), Cost: cost}
			if err := s.Take(ctx, []sluice.Hit{hit}, make([]sluice.Result, 1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(secrets) {
		t.Fatalf("%d keys for %d identities: %q", len(keys), len(secrets), keys)
	}
	for _, k := range keys {
		if len(k) > 32 || !strings.HasPrefix(k, "sl:{") || !strings.HasSuffix(k, "}:tb1") {
			t.Errorf("key %q: want sl:{16 characters}:tb1", k)
		}
		for _, id := range secrets {
			if strings.Contains(k, id[:min(len(id), 8)]) {
				t.Errorf("key %q contains identity %q in clear", k, id[:8])
			}
		}
		ttl := c.PTTL(ctx, k).Val()
		// 6 of 10 per hour consumed: full again in 36 minutes.
		if ttl <= 0 || ttl > 36*time.Minute {
			t.Errorf("key %q: TTL %v, want (0, 36m]", k, ttl)
		}
	}
}

func TestTTLIsTheTimeUntilTheBucketIsFull(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr)
	s := newStore(t, c, nil)
	hit := sluice.Hit{Key: "k", Limit: sluice.PerSecond(10).WithBurst(100), Cost: 25}
	if err := s.Take(context.Background(), []sluice.Hit{hit}, make([]sluice.Result, 1)); err != nil {
		t.Fatal(err)
	}
	ttl := c.PTTL(context.Background(), redisstore.KeyOf(s, hit)).Val()
	if ttl > 2500*time.Millisecond || ttl < 2400*time.Millisecond {
		t.Fatalf("TTL %v, want 2.5 s: 25 tokens at 10 per second", ttl)
	}
}

func TestTTLIsAtLeastOneSecond(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr)
	s := newStore(t, c, nil)
	// Full again after 2 ms, or 4 ms for the windows.
	for _, alg := range []sluice.Algorithm{sluice.TokenBucket, sluice.SlidingWindow, sluice.FixedWindow, sluice.SlidingLog} {
		hit := sluice.Hit{Key: "k", Algorithm: alg, Limit: sluice.Per(1000, 2*time.Millisecond), Cost: 1}
		if err := s.Take(context.Background(), []sluice.Hit{hit}, make([]sluice.Result, 1)); err != nil {
			t.Fatal(err)
		}
		ttl := c.PTTL(context.Background(), redisstore.KeyOf(s, hit)).Val()
		if ttl > time.Second || ttl < 900*time.Millisecond {
			t.Errorf("%v: TTL %v, want 1 s", alg, ttl)
		}
	}
}

func TestServerClock(t *testing.T) {
	t.Parallel() // its own redis-server; no package state, no timing
	srv := redistest.Start(t)
	s := newStore(t, newClient(t, srv.Addr), nil)
	hit := sluice.Hit{Key: "k", Limit: sluice.PerHour(2), Cost: 1}
	out := make([]sluice.Result, 1)
	for i, want := range []bool{true, true, false} {
		if err := s.Take(context.Background(), []sluice.Hit{hit}, out); err != nil {
			t.Fatal(err)
		}
		if out[0].Allowed != want {
			t.Fatalf("request %d: allowed %v, want %v", i, out[0].Allowed, want)
		}
	}
	if ra := out[0].RetryAfter; ra <= 29*time.Minute || ra > 30*time.Minute {
		t.Fatalf("retry-after %v, want just under 30m", ra)
	}
}

func TestUnsafeClientsAreRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		c    redisstore.Client
		want string
	}{
		{"default retries", redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true}), "MaxRetries: -1"},
		{"deadlines ignored", redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}), "ContextTimeoutEnabled: true"},
		{"cluster, deadlines ignored", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}), "ContextTimeoutEnabled: true in redis.ClusterOptions"},
		{"ring", redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}}), "Ring"},
		{"failover cluster", redis.NewFailoverClusterClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"127.0.0.1:1"}, ContextTimeoutEnabled: true}), "redis.NewFailoverClient"},
	}
	for _, tc := range cases {
		t.Cleanup(func() { tc.c.(interface{ Close() error }).Close() })
		t.Run(tc.name, func(t *testing.T) {
			_, err := redisstore.New(tc.c, redisstore.Config{StartupCheckTimeout: -1})
			if !errors.Is(err, redisstore.ErrUnsupportedClient) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrUnsupportedClient saying %q", err, tc.want)
			}
			if _, ok := tc.c.(*redis.Client); ok && !strings.Contains(err.Error(), "redisstore.NewClient") {
				t.Fatalf("err = %v, want it to name redisstore.NewClient", err)
			}
		})
	}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	s, err := redisstore.New(c, redisstore.Config{AllowUnsafeClient: true, StartupCheckTimeout: -1, Logger: quiet})
	if err != nil {
		t.Fatalf("AllowUnsafeClient: %v", err)
	}
	s.Close(context.Background())
	safe := redis.NewClient(safeOptions("127.0.0.1:1"))
	defer safe.Close()
	if _, err := redisstore.New(safe, redisstore.Config{Prefix: "a{b}:"}); err == nil {
		t.Fatal("a prefix with braces was accepted")
	}
}

func TestWarnsWhenKeysCanBeEvicted(t *testing.T) {
	t.Parallel() // its own redis-server; no package state, no timing
	srv := redistest.Start(t, "--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru")
	var buf syncBuffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	s, err := redisstore.New(newClient(t, srv.Addr), redisstore.Config{Secret: []byte("test secret"), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	redisstore.WaitStartupCheck(s)
	s.Close(context.Background())
	if out := buf.String(); !strings.Contains(out, "evict") || !strings.Contains(out, "allkeys-lru") {
		t.Fatalf("no eviction warning; log: %q", out)
	}

	ok := redistest.Start(t, "--maxmemory", "100mb", "--maxmemory-policy", "noeviction")
	buf.Reset()
	s, _ = redisstore.New(newClient(t, ok.Addr), redisstore.Config{Secret: []byte("test secret"), Logger: logger})
	redisstore.WaitStartupCheck(s)
	s.Close(context.Background())
	if out := buf.String(); out != "" {
		t.Fatalf("warned about noeviction: %q", out)
	}
}

// A Redis that cannot be reached fails a call at once, even one without a
// deadline, as unavailable and unambiguous: no connection, nothing sent.
// Idle connections a kill left dead fail their call as unavailable (the
// client cannot tell whether a command it wrote was run) and are replaced.
func TestRedisDownIsUnavailableAndUnambiguous(t *testing.T) {
	t.Parallel() // its own redis-server; no package state, no timing
	for _, warm := range []bool{false, true} {
		t.Run(fmt.Sprint("warm=", warm), func(t *testing.T) {
			srv := redistest.Start(t)
			if !warm {
				srv.Kill()
			}
			s := newStoreWith(t, newClient(t, srv.Addr), nil, redisstore.Config{Breaker: redisstore.BreakerConfig{Disabled: true}})
			hit := []sluice.Hit{{Key: "k", Limit: sluice.PerSecond(1), Cost: 1}}
			if warm {
				if err := s.Take(context.Background(), hit, make([]sluice.Result, 1)); err != nil {
					t.Fatal(err)
				}
				srv.Kill()
			}
			var err error
			for range redisstore.Lanes*2 + 1 { // every ready connection, then none
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // a ceiling against hangs
				err = s.Take(ctx, hit, make([]sluice.Result, 1))
				cancel()
				if !errors.Is(err, sluice.ErrUnavailable) {
					t.Fatalf("err = %v, want ErrUnavailable", err)
				}
				if !sluice.IsAmbiguous(err) {
					break
				}
			}
			if sluice.IsAmbiguous(err) {
				t.Fatalf("err = %v, want it unambiguous once no connection is left", err)
			}
			var se *sluice.StoreError
			if !errors.As(err, &se) || !strings.HasPrefix(se.Error(), "redisstore: take") {
				t.Fatalf("err = %v, want a *sluice.StoreError from redisstore", err)
			}
		})
	}
}

func TestDeadlineIsATimeoutAndAmbiguous(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr)
	s := newStore(t, c, nil)
	ctx := context.Background()
	// The store's connections are up (a check sent before they are is
	// decided otherwise) before CLIENT PAUSE holds every client's commands,
	// for longer than the hang ceiling below.
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	other := newClient(t, srv.Addr)
	if err := other.Do(ctx, "CLIENT", "PAUSE", "1500").Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.Take(ctx, []sluice.Hit{{Key: "k", Limit: sluice.PerSecond(1), Cost: 1}}, make([]sluice.Result, 1))
	if !errors.Is(err, sluice.ErrTimeout) || !sluice.IsAmbiguous(err) {
		t.Fatalf("err = %v, want ErrTimeout, ambiguous", err)
	}
	// A ceiling against hangs, with generous slack: not a speed measurement.
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Take returned after %v with a 50ms deadline", d)
	}
}

// commandCalls reads how often Redis ran cmd, from INFO commandstats.
func commandCalls(t testing.TB, c *redis.Client, cmd string) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
			n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			return n
		}
	}
	return 0
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (b *syncBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.Reset()
}
