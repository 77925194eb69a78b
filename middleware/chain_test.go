package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/sluicehq/sluice/decide"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
)

// A global limiter (r.Use) and a route limiter (r.With): the response
// describes the rules of both, and the binding one across both.
func TestChainedLimitersDescribeEveryRule(t *testing.T) {
	store, _ := newMemstore(t)
	global := rules.MustNew(perIP(sluice.PerMinute(3)))
	route := rules.MustNew(rules.Rule{Name: "export", Key: keyfunc.Global(), Limit: sluice.PerMinute(10)})
	r := chi.NewRouter()
	r.Use(middleware.Limit(store, global))
	r.With(middleware.Limit(store, route)).Get("/export", func(http.ResponseWriter, *http.Request) {})
	srv := httptest.NewServer(r)
	defer srv.Close()

	wantBinding := []string{`"per-ip";r=2;t=20`, `"per-ip";r=1;t=40`, `"per-ip";r=0;t=60`}
	for i, want := range wantBinding {
		resp := get(t, srv.Client(), srv.URL+"/export")
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
		if got := resp.Header.Get("RateLimit-Policy"); got != `"per-ip";q=3;w=60, "export";q=10;w=60` {
			t.Fatalf("request %d: RateLimit-Policy %q", i, got)
		}
		if got := resp.Header.Get("RateLimit"); got != want {
			t.Fatalf("request %d: RateLimit %q, want %q", i, got, want)
		}
	}
	resp := get(t, srv.Client(), srv.URL+"/export")
	if resp.StatusCode != 429 || resp.Header.Get("RateLimit") != `"per-ip";r=0;t=20` {
		t.Fatalf("4th: %d %q", resp.StatusCode, resp.Header.Get("RateLimit"))
	}
}

func TestWithClockDrivesXRateLimitReset(t *testing.T) {
	store, clock := newMemstore(t)
	srv := serve(t, middleware.Limit(store, rules.MustNew(perIP(sluice.PerMinute(6))),
		decide.WithHeaders(headers.XRateLimit), decide.WithClock(clock)), &okHandler{})
	resp := get(t, srv.Client(), srv.URL)
	// One of 6 per minute used: whole again in 10 s, at t0+10 as a Unix time.
	if got, want := resp.Header.Get("X-RateLimit-Reset"), strconv.FormatInt(t0.Unix()+10, 10); got != want {
		t.Fatalf("X-RateLimit-Reset %q, want %q", got, want)
	}
	if _, err := middleware.New(store, rules.MustNew(perIP(sluice.PerMinute(6))), decide.WithClock(nil)); err == nil {
		t.Fatal("nil clock accepted")
	}
}

// A limiter whose store failed open in the middle of a chain does not hide
// the outer limiter's rules from the inner one.
func TestChainThroughAFailedLimiter(t *testing.T) {
	store, _ := newMemstore(t)
	outer := middleware.Limit(store, rules.MustNew(rules.Rule{Name: "outer", Key: keyfunc.Global(), Limit: sluice.PerMinute(100)}))
	middle := middleware.Limit(failingStore{&sluice.StoreError{Op: "x", Kind: sluice.ErrUnavailable}},
		rules.MustNew(rules.Rule{Name: "middle", Key: keyfunc.Global(), Limit: sluice.PerMinute(5)}), decide.WithLogger(quietLogger()))
	inner := middleware.Limit(store, rules.MustNew(rules.Rule{Name: "inner", Key: keyfunc.Global(), Limit: sluice.PerMinute(50)}))
	rec := serveDirect(outer(middle(inner(&okHandler{}))))
	if got := rec.Header().Get("RateLimit-Policy"); rec.Code != 200 || got != `"outer";q=100;w=60, "inner";q=50;w=60` {
		t.Fatalf("status %d, RateLimit-Policy %q", rec.Code, got)
	}
}

// TestHandlerKeepsTheRequestContext checks that a request the limiter
// admitted keeps its context: the values set before the limiter, its
// deadline and its cancellation, also through two chained limiters.
func TestHandlerKeepsTheRequestContext(t *testing.T) {
	st, _ := newMemstore(t)
	type key struct{}
	var seen []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if v, _ := ctx.Value(key{}).(string); v != "outer" {
			seen = append(seen, "value "+v)
		}
		if _, ok := ctx.Deadline(); !ok {
			seen = append(seen, "no deadline")
		}
		if ctx.Err() != nil {
			seen = append(seen, "done before cancel")
		}
		child, cancelChild := context.WithCancel(ctx) // derived from the limiter's context
		defer cancelChild()
		cancel, ok := ctx.Value(cancelKey{}).(context.CancelFunc)
		if !ok {
			seen = append(seen, "no cancel func")
			return
		}
		cancel()
		select {
		case <-child.Done():
		case <-time.After(5 * time.Second):
			seen = append(seen, "cancel did not reach a context derived in the handler")
		}
		if !errors.Is(ctx.Err(), context.Canceled) {
			seen = append(seen, fmt.Sprintf("err %v after cancel", ctx.Err()))
		}
	})
	var chain http.Handler = h
	for _, name := range []string{"inner", "outer"} {
		chain = middleware.Limit(st, rules.MustNew(rules.Rule{Name: name, Key: keyfunc.Global(),
			Limit: sluice.PerMinute(10)}))(chain)
	}
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
	defer cancel()
	ctx = context.WithValue(context.WithValue(ctx, key{}, "outer"), cancelKey{}, context.CancelFunc(cancel))
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	w := httptest.NewRecorder()
	chain.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	if len(seen) > 0 {
		t.Error(seen)
	}
}

type cancelKey struct{}
