package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// newServer serves newRouter on a memstore whose clock stands still until
// the test moves it.
func newServer(t *testing.T) (*httptest.Server, *storetest.Clock) {
	t.Helper()
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock})
	t.Cleanup(func() { store.Close(context.Background()) })
	srv := httptest.NewServer(newRouter(store))
	t.Cleanup(srv.Close)
	return srv, clock
}

// response is what a test needs of an HTTP response, with the body read.
type response struct {
	StatusCode int
	Header     http.Header
	Body       []byte
}

// do sends one request and reads the whole response, so the connection
// goes back to the client's pool.
func do(t *testing.T, srv *httptest.Server, method, path string) response {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
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

func codes(t *testing.T, srv *httptest.Server, method string, paths ...string) []int {
	t.Helper()
	var got []int
	for _, p := range paths {
		got = append(got, do(t, srv, method, p).StatusCode)
	}
	return got
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestLoginRouteHasItsOwnLimit(t *testing.T) {
	srv, clock := newServer(t)

	got := codes(t, srv, http.MethodPost, repeat("/login", 6)...)
	if want := []int{200, 200, 200, 200, 200, 429}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("logins: %v, want %v", got, want)
	}

	resp := do(t, srv, http.MethodPost, "/login")
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429", resp.StatusCode)
	}
	// 5 a minute: one login comes back every 12 s.
	for k, want := range map[string]string{
		"Retry-After":      "12",
		"RateLimit":        `"login";r=0;t=12`,
		"RateLimit-Policy": `"login";q=5;w=60`,
		"Content-Type":     "application/problem+json",
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	var p middleware.Problem
	if err := json.Unmarshal(resp.Body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Status != 429 || fmt.Sprint(p.ViolatedPolicies) != "[login]" {
		t.Fatalf("problem %+v", p)
	}

	// The login limit leaves the other routes alone.
	if got := codes(t, srv, http.MethodGet, "/", "/health", "/api/items"); fmt.Sprint(got) != "[200 200 200]" {
		t.Fatalf("other routes after the login limit tripped: %v", got)
	}

	clock.Advance(12 * time.Second)
	if got := codes(t, srv, http.MethodPost, "/login", "/login"); fmt.Sprint(got) != "[200 429]" {
		t.Fatalf("12 s later: %v, want one more login", got)
	}
}

func TestGroupSharesOneLimit(t *testing.T) {
	srv, _ := newServer(t)

	// The burst is 10, shared by every route of the group.
	paths := append(repeat("/api/items", 5), repeat("/api/items/42", 5)...)
	paths = append(paths, "/api/items/7")
	got := codes(t, srv, http.MethodGet, paths...)
	want := append(repeat("200", 10), "429")
	if fmt.Sprint(got) != "["+strings.Join(want, " ")+"]" {
		t.Fatalf("group: %v, want %v", got, want)
	}

	resp := do(t, srv, http.MethodGet, "/api/items")
	if got := resp.Header.Get("RateLimit-Policy"); got != `"api";q=30;w=60;sluice-burst=10` {
		t.Errorf("RateLimit-Policy %q", got)
	}
	if got := resp.Header.Get("Retry-After"); got != "2" {
		t.Errorf("Retry-After %q, want 2 (one request every 2 s)", got)
	}

	// Neither the login route nor the unlimited ones are affected.
	if got := codes(t, srv, http.MethodPost, "/login"); fmt.Sprint(got) != "[200]" {
		t.Fatalf("login after the group limit tripped: %v", got)
	}
}

func TestUnlimitedRoutes(t *testing.T) {
	srv, _ := newServer(t)
	for _, p := range []string{"/", "/health"} {
		for i := range 200 {
			resp := do(t, srv, http.MethodGet, p)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s #%d: status %d", p, i+1, resp.StatusCode)
			}
			if h := resp.Header.Get("RateLimit"); h != "" {
				t.Fatalf("GET %s: unexpected RateLimit %q", p, h)
			}
		}
	}
}
