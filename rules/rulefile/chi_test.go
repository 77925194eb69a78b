package rulefile_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sluicehq/sluice/keyfunc/chikey"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

const chiRules = `
rules:
  - {name: per-ip, key: ip, limit: {rate: 100, per: 1m}}
  - {name: api-free, key: api_key, plans: [free], limit: {rate: 2, per: 1m}}
  - {name: api-pro, key: api_key, plans: [pro], limit: {rate: 4, per: 1m}}
  - name: item-reads
    key: ip
    match: {methods: [GET], routes: ["/items/{id}"]}
    limit: {rate: 3, per: 1m}
  - {name: user-reads, key: ip, match: {routes: ["/api/users/{id}"]}, limit: {rate: 3, per: 1m}}
  - {name: global, key: global, limit: {rate: 1000, per: 1m}}
`

// newChiServer serves chi routes behind a limiter installed with r.Use,
// before routing, on rules from chiRules.
func newChiServer(t *testing.T) *httptest.Server {
	t.Helper()
	store := memstore.New(memstore.Config{Clock: storetest.NewClock(time.Unix(1_800_000_000, 0))})
	t.Cleanup(func() { store.Close(context.Background()) })
	r := chi.NewRouter()
	cfg := testConfig()
	cfg.Endpoint = chikey.Endpoint(r)
	set := mustParse(t, chiRules, cfg)
	r.Use(middleware.Limit(store, set))
	ok := func(http.ResponseWriter, *http.Request) {}
	r.Get("/items/{id}", ok)
	r.Post("/items/{id}", ok)
	r.Get("/other", ok)
	r.Route("/api", func(api chi.Router) { api.Get("/users/{id}", ok) })
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv
}

type chiResp struct {
	status          int
	policy, binding string
	violated        []string
}

func chiDo(t *testing.T, srv *httptest.Server, method, path string, hdr ...string) chiResp {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
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
	out := chiResp{status: resp.StatusCode, policy: resp.Header.Get("RateLimit-Policy"), binding: resp.Header.Get("RateLimit")}
	if resp.StatusCode == http.StatusTooManyRequests {
		var p middleware.Problem
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			t.Fatal(err)
		}
		out.violated = p.ViolatedPolicies
	}
	return out
}

// Route matching through real chi routing, with the limiter installed
// globally: the rule applies to the route pattern (every id shares it),
// for its methods only, also in a mounted sub-router.
func TestChiRouteMatching(t *testing.T) {
	srv := newChiServer(t)
	first := chiDo(t, srv, "GET", "/items/1")
	if first.status != 200 || first.policy != `"per-ip";q=100;w=60, "item-reads";q=3;w=60, "global";q=1000;w=60` || first.binding != `"item-reads";r=2;t=20` {
		t.Fatalf("first: %+v", first)
	}
	for _, p := range []string{"/items/2", "/items/3"} {
		if r := chiDo(t, srv, "GET", p); r.status != 200 {
			t.Fatalf("GET %s: %+v", p, r)
		}
	}
	if r := chiDo(t, srv, "GET", "/items/4"); r.status != 429 || !slices.Equal(r.violated, []string{"item-reads"}) {
		t.Fatalf("4th item read: %+v", r)
	}
	if r := chiDo(t, srv, "POST", "/items/5"); r.status != 200 || r.policy != `"per-ip";q=100;w=60, "global";q=1000;w=60` {
		t.Fatalf("POST is not a read: %+v", r)
	}
	if r := chiDo(t, srv, "GET", "/other"); r.status != 200 {
		t.Fatalf("other route: %+v", r)
	}
	for i := 1; i <= 3; i++ {
		if r := chiDo(t, srv, "GET", "/api/users/"+strconv.Itoa(i)); r.status != 200 {
			t.Fatalf("sub-router read %d: %+v", i, r)
		}
	}
	if r := chiDo(t, srv, "GET", "/api/users/9"); r.status != 429 || !slices.Equal(r.violated, []string{"user-reads"}) {
		t.Fatalf("4th sub-router read: %+v", r)
	}
}

// Plan matching through real chi routing: each plan its own limit, the
// headers listing only the rules that apply, the strictest binding.
func TestChiPlanMatching(t *testing.T) {
	srv := newChiServer(t)
	free := []string{"X-API-Key", "k-free", "X-Plan", "free"}
	pro := []string{"X-API-Key", "k-pro", "X-Plan", "pro"}
	r := chiDo(t, srv, "GET", "/other", free...)
	if r.status != 200 || r.policy != `"per-ip";q=100;w=60, "api-free";q=2;w=60, "global";q=1000;w=60` || r.binding != `"api-free";r=1;t=30` {
		t.Fatalf("free: %+v", r)
	}
	chiDo(t, srv, "GET", "/other", free...)
	if r := chiDo(t, srv, "GET", "/other", free...); r.status != 429 || !slices.Equal(r.violated, []string{"api-free"}) {
		t.Fatalf("3rd free request: %+v", r)
	}
	for i := 1; i <= 4; i++ {
		r := chiDo(t, srv, "GET", "/other", pro...)
		if r.status != 200 || r.policy != `"per-ip";q=100;w=60, "api-pro";q=4;w=60, "global";q=1000;w=60` {
			t.Fatalf("pro request %d: %+v", i, r)
		}
	}
	if r := chiDo(t, srv, "GET", "/other", pro...); r.status != 429 || !slices.Equal(r.violated, []string{"api-pro"}) {
		t.Fatalf("5th pro request: %+v", r)
	}
	// No plan: only the rules without plans.
	if r := chiDo(t, srv, "GET", "/other", "X-API-Key", "k-none"); r.status != 200 || r.policy != `"per-ip";q=100;w=60, "global";q=1000;w=60` {
		t.Fatalf("no plan: %+v", r)
	}
	// The strictest wins when a route rule and a plan rule both apply.
	if r := chiDo(t, srv, "GET", "/items/1", "X-API-Key", "k-pro2", "X-Plan", "pro"); r.binding != `"item-reads";r=2;t=20` {
		t.Fatalf("binding: %+v", r)
	}
}
