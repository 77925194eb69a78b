package middleware_test

import (
	"context"
	"github.com/sluicehq/sluice/decide"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/redisstore"
	"github.com/sluicehq/sluice/store/storetest"
)

func newRedisStore(t *testing.T, addr string) *redisstore.Store {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true, DialerRetries: 1})
	t.Cleanup(func() { c.Close() })
	s, err := redisstore.New(c, redisstore.Config{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func TestRedisEndToEnd(t *testing.T) {
	srv := redistest.Start(t)
	store := newRedisStore(t, srv.Addr)
	set := rules.MustNew(
		perIP(sluice.PerMinute(100)),
		rules.Rule{Name: "api-key", Key: keyfunc.APIKey("X-API-Key"), Limit: sluice.PerHour(2)},
	)
	next := &okHandler{}
	// A generous budget, as in the tests below: under -race a cold store's
	// first call can exceed the default 50 ms and be let through.
	h := serve(t, middleware.Limit(store, set, decide.WithBudget(5*time.Second)), next)
	for i, want := range []int{200, 200, 429} {
		resp := get(t, h.Client(), h.URL, "X-API-Key", "k-123")
		if resp.StatusCode != want {
			t.Fatalf("request %d: %d, want %d", i, resp.StatusCode, want)
		}
		if want == 429 {
			if ra := resp.Header.Get("Retry-After"); ra != "1800" {
				t.Fatalf("Retry-After %q, want 1800", ra)
			}
			if p := problem(t, resp); len(p.ViolatedPolicies) != 1 || p.ViolatedPolicies[0] != "api-key" {
				t.Fatalf("problem %+v", p)
			}
		}
	}
	// The denied request consumed nothing from the per-IP rule: 2 used, 98 left.
	resp := get(t, h.Client(), h.URL, "X-API-Key", "another-key")
	if got := resp.Header.Get("RateLimit-Policy"); got != `"per-ip";q=100;w=60, "api-key";q=2;w=3600` {
		t.Fatalf("RateLimit-Policy %q", got)
	}
	if got := resp.Header.Get("RateLimit"); got != `"api-key";r=1;t=1800` {
		t.Fatalf("RateLimit %q, want the api-key rule binding", got)
	}
	if resp.StatusCode != http.StatusOK || next.calls.Load() != 3 {
		t.Fatalf("status %d, handler calls %d", resp.StatusCode, next.calls.Load())
	}
}

func TestEightMiddlewareInstancesOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	set := rules.MustNew(perIP(sluice.PerHour(1).WithBurst(storetest.Capacity)))
	handlers := make([]http.Handler, storetest.Clients)
	for i := range handlers { // separate clients, pools and stores
		handlers[i] = middleware.Limit(newRedisStore(t, srv.Addr), set, decide.WithBudget(5*time.Second))(&okHandler{})
	}
	if got := raceThroughMiddleware(t, handlers); got != storetest.Capacity {
		t.Fatalf("admitted %d, want exactly %d", got, storetest.Capacity)
	}
}

func TestHugeIdentityGivesABoundedRedisKey(t *testing.T) {
	srv := redistest.Start(t)
	store := newRedisStore(t, srv.Addr)
	set := rules.MustNew(rules.Rule{Name: "api-key", Key: keyfunc.APIKey("X-API-Key"), Limit: sluice.PerMinute(1)})
	h := middleware.Limit(store, set, decide.WithBudget(5*time.Second))(&okHandler{})
	huge := strings.Repeat("k", 1<<20)
	for i, want := range []int{200, 429} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("X-API-Key", huge)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Fatalf("request %d: %d, want %d", i, rec.Code, want)
		}
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	var keys []string
	for _, k := range c.Keys(context.Background(), "*").Val() {
		if !strings.HasSuffix(k, "{instances}") { // the buckets, not the store's instance count
			keys = append(keys, k)
		}
	}
	if len(keys) != 1 || len(keys[0]) > 32 || strings.Contains(keys[0], "kkkk") {
		t.Fatalf("keys %q: want one short key without the identity", keys)
	}
	if ttl := c.PTTL(context.Background(), keys[0]).Val(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("TTL %v", ttl)
	}
}
