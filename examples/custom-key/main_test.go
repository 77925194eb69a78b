package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
	router, err := newRouter(store)
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

// do sends one request with the given Host header and reads the whole
// response.
func do(t *testing.T, srv *httptest.Server, method, host, path string) response {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
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

func decodeProblem(t *testing.T, r response) middleware.Problem {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
	var p middleware.Problem
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTenantKey(t *testing.T) {
	for _, tc := range []struct {
		host, want string
	}{
		{"acme.localhost", "acme"},
		{"acme.localhost:8080", "acme"},
		{"ACME.Example.COM.", "acme"}, // one tenant, whatever the spelling
		{"globex.api.example.com", "globex"},
		{"unknown.localhost", ""}, // invented tenants are refused
		{"localhost:8080", ""},    // no subdomain
		{"acme", ""},
		{"", ""},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = tc.host
		got, err := tenantKey(r)
		if tc.want == "" {
			if err == nil || got != "" {
				t.Errorf("Host %q: got %q, %v; want an error", tc.host, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Host %q: got %q, %v; want %q", tc.host, got, err, tc.want)
		}
	}
}

func TestUnknownTenantIsRefused(t *testing.T) {
	srv, _ := newServer(t)
	for _, host := range []string{"unknown.localhost", "127.0.0.1"} {
		resp := do(t, srv, "GET", host, "/hello")
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("Host %q: status %d, want 400", host, resp.StatusCode)
		}
		if p := decodeProblem(t, resp); p.Status != 400 {
			t.Fatalf("Host %q: problem %+v", host, p)
		}
	}
}

func TestPerTenantIPLimit(t *testing.T) {
	srv, clock := newServer(t)

	for i := range 20 {
		resp := do(t, srv, "GET", "acme.localhost", "/hello")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d", i+1, resp.StatusCode)
		}
		if i == 0 && string(resp.Body) != "{\"tenant\":\"acme\"}\n" {
			t.Fatalf("body %q", resp.Body)
		}
	}
	// Another spelling of the same tenant shares its buckets.
	resp := do(t, srv, "GET", "ACME.localhost.", "/hello")
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("21st request: status %d, want 429", resp.StatusCode)
	}
	if got := resp.Header.Get("Retry-After"); got != "3" {
		t.Errorf("Retry-After %q, want 3 (20 a minute)", got)
	}
	if got := resp.Header.Get("RateLimit"); got != `"per-tenant-ip";r=0;t=3` {
		t.Errorf("RateLimit %q", got)
	}
	if p := decodeProblem(t, resp); fmt.Sprint(p.ViolatedPolicies) != "[per-tenant-ip]" {
		t.Errorf("violated policies %v", p.ViolatedPolicies)
	}

	// Another tenant from the same client has buckets of its own.
	if resp := do(t, srv, "GET", "globex.localhost", "/hello"); resp.StatusCode != http.StatusOK {
		t.Fatalf("other tenant: status %d", resp.StatusCode)
	}

	clock.Advance(3 * time.Second)
	if resp := do(t, srv, "GET", "acme.localhost", "/hello"); resp.StatusCode != http.StatusOK {
		t.Fatalf("after Retry-After: status %d", resp.StatusCode)
	}
}

func TestReportLimitPerTenantAndRoute(t *testing.T) {
	srv, _ := newServer(t)
	post := func(host, path string) int { return do(t, srv, "POST", host, path).StatusCode }

	var got []int
	for range 4 {
		got = append(got, post("acme.localhost", "/reports/export"))
	}
	if fmt.Sprint(got) != "[200 200 200 429]" {
		t.Fatalf("exports: %v, want three then 429", got)
	}
	resp := do(t, srv, "POST", "acme.localhost", "/reports/export")
	if p := decodeProblem(t, resp); fmt.Sprint(p.ViolatedPolicies) != "[report]" {
		t.Fatalf("violated policies %v", p.ViolatedPolicies)
	}
	if got := resp.Header.Get("Retry-After"); got != "20" {
		t.Errorf("Retry-After %q, want 20 (3 a minute)", got)
	}
	// Each report route, and each tenant, has its own bucket; the rest of
	// the API is not affected.
	if c := post("acme.localhost", "/reports/rebuild"); c != 200 {
		t.Errorf("other report route: %d", c)
	}
	if c := post("globex.localhost", "/reports/export"); c != 200 {
		t.Errorf("other tenant: %d", c)
	}
	if c := do(t, srv, "GET", "acme.localhost", "/hello").StatusCode; c != 200 {
		t.Errorf("GET /hello: %d", c)
	}
	// Report requests count against the tenant's general limits too, the
	// refused ones included: the general limiter runs first and admitted
	// them before the report limiter refused them. Of 20: 5 exports, 1
	// rebuild, 2 greetings.
	resp = do(t, srv, "GET", "acme.localhost", "/hello")
	if got := resp.Header.Get("RateLimit-Policy"); got != `"per-tenant";q=100;w=60, "per-tenant-ip";q=20;w=60` {
		t.Errorf("RateLimit-Policy %q", got)
	}
	if got := resp.Header.Get("RateLimit"); got != `"per-tenant-ip";r=12;t=24` {
		t.Errorf("RateLimit %q", got)
	}
}
