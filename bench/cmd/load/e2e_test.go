package main

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/bench"
	"github.com/sluicehq/sluice/internal/redistest"
)

// TestFloorMiddleware checks the floor server's middleware against a real
// Redis: it admits under the limit, answers 429 past it and 400 for a key
// outside the key space, and lets a request through, counted as failed
// open, when Redis does not answer.
func TestFloorMiddleware(t *testing.T) {
	srv := redistest.Start(t)
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	get := func(h http.Handler, key string) int {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("X-API-Key", key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	spec := bench.Spec{Rate: 3, Period: time.Hour, Burst: 3, Keys: bench.Keys(2)}
	env := &bench.Env{Addr: srv.Addr, PoolSize: 4}
	defer env.Close()
	var outcomes [8]atomic.Int64
	mw, err := floorMiddleware(env, spec, outcomes[:])
	if err != nil {
		t.Fatal(err)
	}
	h := mw(ok)
	for i := range 3 {
		if code := get(h, spec.Keys[0]); code != http.StatusOK {
			t.Fatalf("request %d under the limit: %d", i, code)
		}
	}
	if code := get(h, spec.Keys[0]); code != http.StatusTooManyRequests {
		t.Errorf("request past the limit: %d, want 429", code)
	}
	if code := get(h, spec.Keys[1]); code != http.StatusOK {
		t.Errorf("another key: %d, want 200", code)
	}
	if code := get(h, "not-a-key"); code != http.StatusBadRequest {
		t.Errorf("a key outside the key space: %d, want 400", code)
	}
	if n := outcomes[sluice.OutcomeAllowed].Load(); n != 4 {
		t.Errorf("%d counted allowed, want 4", n)
	}

	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	down := &bench.Env{Addr: "127.0.0.1:" + strconv.Itoa(port), PoolSize: 1}
	defer down.Close()
	mw, err = floorMiddleware(down, spec, outcomes[:])
	if err != nil {
		t.Fatal(err)
	}
	if code := get(mw(ok), spec.Keys[0]); code != http.StatusOK {
		t.Errorf("with Redis down: %d, want 200 (failed open)", code)
	}
	if n := outcomes[sluice.OutcomeFailedOpen].Load(); n != 1 {
		t.Errorf("%d counted failed open, want 1", n)
	}
}
