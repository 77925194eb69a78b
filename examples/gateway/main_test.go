package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/sluicehq/sluice/decide"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// newServer serves the demo on a memstore whose clock stands still until
// the test moves it, so "quick requests" are exactly simultaneous.
func newServer(t *testing.T, opts ...middleware.Option) (*httptest.Server, *storetest.Clock) {
	t.Helper()
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock})
	t.Cleanup(func() { store.Close(context.Background()) })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	router, err := newRouter(store, log, opts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)
	return srv, clock
}

// response is what a test needs of an HTTP response, with the body read.
type response struct {
	StatusCode int
	Header     http.Header
	Body       []byte
}

// get sends GET path with headers given as name, value pairs and reads the
// whole response.
func get(t *testing.T, srv *httptest.Server, path string, hdr ...string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, body}
}

// untilDenied sends up to max requests and returns the number of the first
// one that is not 200 (1-based) and its response. Every request before it
// must succeed.
func untilDenied(t *testing.T, srv *httptest.Server, max int, path string, hdr ...string) (int, response) {
	t.Helper()
	for i := 1; i <= max; i++ {
		resp := get(t, srv, path, hdr...)
		if resp.StatusCode != http.StatusOK {
			return i, resp
		}
	}
	t.Fatalf("GET %s: %d requests, none refused", path, max)
	return 0, response{}
}

func decodeProblem(t *testing.T, r response) middleware.Problem {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
	var p middleware.Problem
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatalf("problem body %q: %v", r.Body, err)
	}
	return p
}

// checkDenied checks a 429 from the rule named policy, whose limit lets
// one request through every interval.
func checkDenied(t *testing.T, resp response, policy string, retryAfter string) {
	t.Helper()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429; body %q", resp.StatusCode, resp.Body)
	}
	for k, want := range map[string]string{
		"Retry-After":   retryAfter,
		"Cache-Control": "no-store",
		"RateLimit":     fmt.Sprintf("%q;r=0;t=%s", policy, retryAfter),
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if got := resp.Header.Get("RateLimit-Policy"); !strings.Contains(got, fmt.Sprintf("%q;", policy)) {
		t.Errorf("RateLimit-Policy %q does not list %q", got, policy)
	}
	p := decodeProblem(t, resp)
	if p.Status != http.StatusTooManyRequests || p.Type != middleware.TypeQuotaExceeded || fmt.Sprint(p.ViolatedPolicies) != "["+policy+"]" {
		t.Errorf("problem %+v, want a quota-exceeded problem naming %s", p, policy)
	}
}

func TestDefaultRulesTripOnEveryRoute(t *testing.T) {
	for _, path := range []string{"/", "/items", "/items/42", "/me"} {
		t.Run(path, func(t *testing.T) {
			srv, _ := newServer(t)
			first := get(t, srv, path)
			if first.StatusCode != http.StatusOK {
				t.Fatalf("first request: status %d", first.StatusCode)
			}
			if got, want := first.Header.Get("RateLimit-Policy"), `"per-ip";q=50;w=60, "global";q=5000;w=60;sluice-burst=500`; got != want {
				t.Errorf("RateLimit-Policy %q, want %q", got, want)
			}
			if got, want := first.Header.Get("RateLimit"), `"per-ip";r=49;t=2`; got != want {
				t.Errorf("RateLimit %q, want %q", got, want)
			}
			n, resp := untilDenied(t, srv, 99, path) // 100 with the first
			if n+1 != 51 {
				t.Errorf("request %d refused, want the 51st", n+1)
			}
			checkDenied(t, resp, "per-ip", "2") // 50 a minute: one every 1.2 s
		})
	}
}

func TestPerIPLimitIsSharedByRoutesAndRefills(t *testing.T) {
	srv, clock := newServer(t)
	paths := []string{"/", "/items", "/items/42", "/me", "/nope"}
	for i := range 50 {
		if resp := get(t, srv, paths[i%len(paths)]); resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
			t.Fatalf("request %d: status %d", i+1, resp.StatusCode)
		}
	}
	for _, p := range paths {
		if resp := get(t, srv, p); resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("GET %s after 50 requests: status %d, want 429", p, resp.StatusCode)
		}
	}
	clock.Advance(1200 * time.Millisecond)
	if resp := get(t, srv, "/items"); resp.StatusCode != http.StatusOK {
		t.Fatalf("after 1.2 s: status %d, want 200", resp.StatusCode)
	}
	if resp := get(t, srv, "/items"); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second request after 1.2 s: status %d, want 429", resp.StatusCode)
	}
}

func TestPerAPIKeyLimit(t *testing.T) {
	srv, _ := newServer(t)
	n, resp := untilDenied(t, srv, 100, "/items", "X-API-Key", "key-1")
	if n != 21 {
		t.Errorf("request %d refused, want the 21st", n)
	}
	checkDenied(t, resp, "per-api-key", "3") // 20 a minute: one every 3 s

	// The limit follows the key, on every route; another key, and the
	// same client without a key, are not affected.
	if resp := get(t, srv, "/me", "X-API-Key", "key-1"); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("same key, other route: status %d, want 429", resp.StatusCode)
	}
	if resp := get(t, srv, "/items", "X-API-Key", "key-2"); resp.StatusCode != http.StatusOK {
		t.Errorf("other key: status %d, want 200", resp.StatusCode)
	}
	if resp := get(t, srv, "/items"); resp.StatusCode != http.StatusOK {
		t.Errorf("no key: status %d, want 200", resp.StatusCode)
	}
}

func TestPerUserEndpointLimit(t *testing.T) {
	srv, _ := newServer(t)
	// /items/{id} is one endpoint, whatever the id.
	for i := 1; i <= 10; i++ {
		if resp := get(t, srv, fmt.Sprintf("/items/%d", i), "X-User", "alice"); resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
	}
	resp := get(t, srv, "/items/11", "X-User", "alice")
	checkDenied(t, resp, "per-user-endpoint", "6") // 10 a minute: one every 6 s

	// Not across endpoints, nor across users.
	for _, tc := range []struct{ path, user string }{
		{"/items", "alice"},
		{"/me", "alice"},
		{"/items/1", "bob"},
	} {
		if resp := get(t, srv, tc.path, "X-User", tc.user); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s as %s: status %d, want 200", tc.path, tc.user, resp.StatusCode)
		}
	}
	me := get(t, srv, "/me", "X-User", "alice")
	if string(me.Body) != "{\"user\":\"alice\"}\n" {
		t.Errorf("/me body %q", me.Body)
	}
}

func TestResponses(t *testing.T) {
	srv, _ := newServer(t)
	resp := get(t, srv, "/items/42")
	if resp.StatusCode != http.StatusOK || string(resp.Body) != "{\"id\":\"42\"}\n" {
		t.Fatalf("GET /items/42: %d %q", resp.StatusCode, resp.Body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

func TestHeaderModes(t *testing.T) {
	srv, _ := newServer(t, decide.WithHeaders(headers.Draft06))
	resp := get(t, srv, "/")
	for k, want := range map[string]string{
		"RateLimit-Limit":     "50",
		"RateLimit-Remaining": "49",
		"RateLimit-Reset":     "2",
		"RateLimit":           "",
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}
