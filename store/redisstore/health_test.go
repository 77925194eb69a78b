package redisstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// health asks s's handler and decodes its answer.
func health(t *testing.T, s *redisstore.Store) (int, redisstore.Health) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.HealthHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	var h redisstore.Health
	if err := json.Unmarshal(rec.Body.Bytes(), &h); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	return rec.Code, h
}

// A fresh store is ready once it can decide: its first call after Ready
// is decided by Redis within a tight budget; the handler says 200.
func TestReady(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStoreWith(t, newClient(t, srv.Addr), nil, redisstore.Config{PresenceInterval: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	call, cancelCall := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelCall()
	out := make([]sluice.Result, 1)
	if err := s.Take(call, []sluice.Hit{{Key: "ready", Limit: sluice.PerMinute(10)}}, out); err != nil || !out[0].Allowed {
		t.Fatalf("first call after Ready: %+v, %v", out[0], err)
	}
	code, h := health(t, s)
	if code != http.StatusOK || !h.Ready || h.Breaker != "closed" || h.IdleConns < 1 {
		t.Fatalf("health %d %+v", code, h)
	}
}

// Redis down: Ready gives up with ctx, saying why; the handler says 503.
func TestNotReady(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStoreWith(t, newClient(t, srv.Addr), nil, redisstore.Config{})
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := s.Ready(ctx)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ready with Redis down: %v", err)
	}
	code, h := health(t, s)
	if code != http.StatusServiceUnavailable || h.Ready || h.Reason == "" {
		t.Fatalf("health %d %+v", code, h)
	}
	s.Close(context.Background())
	if err := s.Ready(context.Background()); !errors.Is(err, sluice.ErrClosed) {
		t.Fatalf("Ready after Close: %v", err)
	}
}

// Redis gone after the store was ready, its ready connections all set up
// and idle: Ready asks Redis rather than the connections set up before, so
// it gives up with ctx, saying why, and the handler says 503. Redis back,
// the store is ready again.
func TestNotReadyOnceRedisIsGone(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStoreWith(t, newClient(t, srv.Addr), nil, redisstore.Config{})
	ready, cancelReady := context.WithTimeout(context.Background(), ceiling)
	defer cancelReady()
	if err := s.Ready(ready); err != nil {
		t.Fatal(err)
	}
	waitConnsReady(t, s)
	srv.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := s.Ready(ctx); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ready with Redis gone: %v", err)
	}
	if code, h := health(t, s); code != http.StatusServiceUnavailable || h.Ready || h.Reason == "" {
		t.Fatalf("health with Redis gone: %d %+v", code, h)
	}
	srv.Restart()
	if err := s.Ready(ready); err != nil {
		t.Fatalf("Ready with Redis back: %v", err)
	}
}

// On a cluster, ready means the scripts are on every master (run by
// TestOnOneCluster).
func testReadyCluster(t *testing.T, c *redistest.Cluster) {
	s := newStoreWith(t, newClusterClient(t, c.Addrs()), nil, redisstore.Config{StartupCheckTimeout: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	masters := map[string]bool{}
	for _, slot := range []int{0, 5461, 10923, 16383} {
		masters[c.MasterOf(slot).Addr] = true
	}
	if len(masters) != 3 {
		t.Fatalf("masters %v, want 3", masters)
	}
	for addr := range masters {
		exists := newClient(t, addr).ScriptExists(ctx, redisstore.TakeSHA().(string), redisstore.RefundSHA().(string)).Val()
		if len(exists) != 2 || !exists[0] || !exists[1] {
			t.Errorf("master %s: scripts loaded %v", addr, exists)
		}
	}
}
