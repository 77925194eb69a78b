package middleware_test

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/keyfunc/chikey"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
)

// statuses fetches each path once and returns the status codes.
func statuses(t *testing.T, c *http.Client, base string, paths ...string) []int {
	t.Helper()
	codes := make([]int, len(paths))
	for i, p := range paths {
		codes[i] = get(t, c, base+p).StatusCode
	}
	return codes
}

func TestChiGlobalUseKeysEndpointsByRoutePattern(t *testing.T) {
	store, _ := newMemstore(t)
	r := chi.NewRouter()
	set := rules.MustNew(rules.Rule{Name: "per-endpoint", Key: chikey.Endpoint(r), Limit: sluice.PerMinute(2)})
	r.Use(middleware.Limit(store, set))
	r.Get("/users/{id}", func(w http.ResponseWriter, r *http.Request) {})
	r.Get("/health", func(w http.ResponseWriter, r *http.Request) {})
	srv := httptest.NewServer(r)
	defer srv.Close()

	got := statuses(t, srv.Client(), srv.URL, "/users/1", "/users/2", "/users/3", "/health")
	if want := []int{200, 200, 429, 200}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("statuses %v, want %v: /users/1 and /users/2 must share the /users/{id} bucket", got, want)
	}
	// Unknown paths share one bucket, not one per URL.
	got = statuses(t, srv.Client(), srv.URL, "/nope/1", "/nope/2", "/nope/3")
	if want := []int{404, 404, 429}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("unmatched paths: %v, want %v", got, want)
	}
}

func TestChiPerRouteAndGroupLimits(t *testing.T) {
	store, _ := newMemstore(t)
	ip := func(name string, n int64) *rules.Set {
		return rules.MustNew(rules.Rule{Name: name, Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(n)})
	}
	r := chi.NewRouter()
	r.With(middleware.Limit(store, ip("login", 1))).Post("/login", func(w http.ResponseWriter, r *http.Request) {})
	r.Get("/free", func(w http.ResponseWriter, r *http.Request) {})
	r.Group(func(g chi.Router) {
		g.Use(middleware.Limit(store, ip("api", 2)))
		g.Get("/api/a", func(w http.ResponseWriter, r *http.Request) {})
		g.Get("/api/b", func(w http.ResponseWriter, r *http.Request) {})
	})
	srv := httptest.NewServer(r)
	defer srv.Close()
	c := srv.Client()

	post := func() int {
		resp, err := c.Post(srv.URL+"/login", "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if a, b := post(), post(); a != 200 || b != 429 {
		t.Fatalf("login: %d, %d; want 200, 429", a, b)
	}
	got := statuses(t, c, srv.URL, "/api/a", "/api/b", "/api/a", "/free", "/free", "/free")
	if want := []int{200, 200, 429, 200, 200, 200}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("group and free routes: %v, want %v", got, want)
	}
}

func TestServeMuxInFront(t *testing.T) {
	store, _ := newMemstore(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {})
	set := rules.MustNew(rules.Rule{Name: "per-endpoint", Key: keyfunc.EndpointFromMux(mux), Limit: sluice.PerMinute(2)})
	srv := httptest.NewServer(middleware.Limit(store, set)(mux))
	defer srv.Close()
	got := statuses(t, srv.Client(), srv.URL, "/items/1", "/items/2", "/items/3")
	if want := []int{200, 200, 429}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%v, want %v", got, want)
	}
}

func TestHTTP2BehavesLikeHTTP1(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("h2=%v", h2), func(t *testing.T) {
			store, _ := newMemstore(t)
			srv := httptest.NewUnstartedServer(middleware.Limit(store, rules.MustNew(perIP(sluice.PerMinute(1))))(&okHandler{}))
			srv.EnableHTTP2 = h2
			srv.StartTLS()
			defer srv.Close()
			c := srv.Client()
			if h2 {
				c.Transport.(*http.Transport).ForceAttemptHTTP2 = true
			} else {
				c.Transport.(*http.Transport).TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
			}
			first := get(t, c, srv.URL)
			second := get(t, c, srv.URL)
			if wantMajor := map[bool]int{false: 1, true: 2}[h2]; first.ProtoMajor != wantMajor {
				t.Fatalf("protocol %s, want HTTP/%d", first.Proto, wantMajor)
			}
			if first.StatusCode != 200 || second.StatusCode != 429 {
				t.Fatalf("statuses %d, %d", first.StatusCode, second.StatusCode)
			}
			if second.Header.Get("Retry-After") != "60" || second.Header.Get("RateLimit") != `"per-ip";r=0;t=60` {
				t.Fatalf("429 headers over %s: %v", second.Proto, second.Header)
			}
			if p := problem(t, second); p.Status != 429 {
				t.Fatalf("problem over %s: %+v", second.Proto, p)
			}
		})
	}
}
