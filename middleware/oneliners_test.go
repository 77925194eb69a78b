package middleware_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
)

// The one-liners limit what httprate's do, by the identity each names.
func TestOneLiners(t *testing.T) {
	type req struct {
		remote, xff, apiKey string
		want                int
	}
	cases := []struct {
		name string
		mw   func(sluice.Store) func(http.Handler) http.Handler
		reqs []req
	}{
		{"by IP", func(s sluice.Store) func(http.Handler) http.Handler {
			return middleware.LimitByIP(s, sluice.PerMinute(1))
		}, []req{
			{"192.0.2.1:1", "", "", 200}, {"192.0.2.1:2", "", "", 429}, {"192.0.2.2:1", "", "", 200},
		}},
		{"by real IP behind trusted proxies", func(s sluice.Store) func(http.Handler) http.Handler {
			return middleware.LimitByRealIP(s, sluice.PerMinute(1), []string{"10.0.0.0/8"})
		}, []req{
			{"10.0.0.1:1", "198.51.100.7", "", 200},
			{"10.0.0.2:1", "198.51.100.7", "", 429},   // the same client through another proxy
			{"10.0.0.1:1", "198.51.100.8", "", 200},   // another client
			{"192.0.2.9:1", "198.51.100.9", "", 200},  // an untrusted peer: keyed by itself,
			{"192.0.2.9:2", "198.51.100.10", "", 429}, // whatever it claims
		}},
		{"all", func(s sluice.Store) func(http.Handler) http.Handler {
			return middleware.LimitAll(s, sluice.PerMinute(2))
		}, []req{
			{"192.0.2.1:1", "", "", 200}, {"192.0.2.2:1", "", "", 200}, {"192.0.2.3:1", "", "", 429},
		}},
		{"by API key", func(s sluice.Store) func(http.Handler) http.Handler {
			return middleware.LimitBy(s, sluice.PerMinute(1), keyfunc.APIKey("X-API-Key"))
		}, []req{
			{"192.0.2.1:1", "", "k1", 200}, {"192.0.2.2:1", "", "k1", 429}, {"192.0.2.1:1", "", "k2", 200},
			{"192.0.2.1:1", "", "", 200}, // no key: not counted
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store, _ := newMemstore(t)
			h := tc.mw(store)(&okHandler{})
			for i, r := range tc.reqs {
				q := httptest.NewRequest(http.MethodGet, "/", nil)
				q.RemoteAddr = r.remote
				if r.xff != "" {
					q.Header.Set("X-Forwarded-For", r.xff)
				}
				if r.apiKey != "" {
					q.Header.Set("X-API-Key", r.apiKey)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, q)
				if w.Code != r.want {
					t.Fatalf("request %d (%+v): %d, want %d", i, r, w.Code, r.want)
				}
			}
		})
	}
}

func TestLimitByRealIPRefusesABadCIDR(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for an invalid CIDR")
		}
	}()
	store, _ := newMemstore(t)
	middleware.LimitByRealIP(store, sluice.PerMinute(1), []string{"10.0.0.0/33"})
}

// httprate's common shape, a per-IP limit on every route and a stricter
// one on login, keeps two limits: each one-liner counts in buckets of its
// own, over real HTTP round trips.
func TestOneLinersOfOneKindCountApart(t *testing.T) {
	store, _ := newMemstore(t)
	r := chi.NewRouter()
	r.Use(middleware.LimitByIP(store, sluice.PerMinute(100)))
	r.With(middleware.LimitByIP(store, sluice.PerMinute(5))).Post("/login", func(http.ResponseWriter, *http.Request) {})
	r.Get("/", func(http.ResponseWriter, *http.Request) {})
	srv := httptest.NewServer(r)
	defer srv.Close()

	var login *http.Response
	for i := range 4 {
		if login = send(t, srv, http.MethodPost, "/login", nil); login.StatusCode != http.StatusOK {
			t.Fatalf("login %d: %d", i+1, login.StatusCode)
		}
	}
	policy := quotas(t, login.Header.Get("RateLimit-Policy"))
	if len(policy) != 2 {
		t.Fatalf("login: RateLimit-Policy %q: want the two one-liners' policies, named apart", login.Header.Get("RateLimit-Policy"))
	}
	global, perLogin := "", ""
	for name, q := range policy {
		switch q {
		case 100:
			global = name
		case 5:
			perLogin = name
		}
	}
	if global == "" || perLogin == "" {
		t.Fatalf("login: RateLimit-Policy %q: want quotas 100 and 5", login.Header.Get("RateLimit-Policy"))
	}
	if name, left := remaining(t, login.Header.Get("RateLimit")); name != perLogin || left != 1 {
		t.Fatalf("login 4: RateLimit %q, want %q with 1 left", login.Header.Get("RateLimit"), perLogin)
	}

	home := send(t, srv, http.MethodGet, "/", nil)
	if name, left := remaining(t, home.Header.Get("RateLimit")); home.StatusCode != http.StatusOK || name != global || left != 95 {
		t.Fatalf("GET / after 4 logins: %d, RateLimit %q; want 200 and %q with 95 of 100 left", home.StatusCode, home.Header.Get("RateLimit"), global)
	}
	if p := home.Header.Get("RateLimit-Policy"); !strings.Contains(p, strconv.Quote(global)) || strings.Contains(p, strconv.Quote(perLogin)) {
		t.Fatalf("GET /: RateLimit-Policy %q, want %q only", p, global)
	}
	send(t, srv, http.MethodPost, "/login", nil)
	refused := send(t, srv, http.MethodPost, "/login", nil)
	if p := problem(t, refused); refused.StatusCode != http.StatusTooManyRequests || fmt.Sprint(p.ViolatedPolicies) != fmt.Sprint([]string{perLogin}) {
		t.Fatalf("login 6: %d, violated %v; want 429 by %q", refused.StatusCode, p.ViolatedPolicies, perLogin)
	}
}

// One-liners named alike share buckets; the names show in the headers.
func TestWithNameNamesTheOneLiner(t *testing.T) {
	store, _ := newMemstore(t)
	a := middleware.LimitByIP(store, sluice.PerMinute(2), middleware.WithName("per-client"))
	b := middleware.LimitByIP(store, sluice.PerMinute(2), middleware.WithName("per-client"))
	c := middleware.LimitByIP(store, sluice.PerMinute(2), middleware.WithName("login"))
	h := &okHandler{}
	srvA, srvB, srvC := serve(t, a, h), serve(t, b, h), serve(t, c, h)
	if resp := send(t, srvA, http.MethodGet, "/", nil); resp.Header.Get("RateLimit-Policy") != `"per-client";q=2;w=60` {
		t.Fatalf("RateLimit-Policy %q", resp.Header.Get("RateLimit-Policy"))
	}
	if resp := send(t, srvB, http.MethodGet, "/", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("second request: %d", resp.StatusCode)
	}
	if resp := send(t, srvA, http.MethodGet, "/", nil); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("third request named alike: %d, want 429 (one bucket)", resp.StatusCode)
	}
	if resp := send(t, srvC, http.MethodGet, "/", nil); resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("RateLimit"), `"login";r=1`) {
		t.Fatalf("another name: %d, RateLimit %q; want 200 from a bucket of its own", resp.StatusCode, resp.Header.Get("RateLimit"))
	}

	set := rules.MustNew(perIP(sluice.PerMinute(1)))
	if _, err := middleware.New(store, set, middleware.WithName("x")); !errors.Is(err, sluice.ErrInvalidConfig) || !strings.Contains(err.Error(), "WithName") {
		t.Fatalf("New with WithName: %v, want an error wrapping ErrInvalidConfig naming WithName", err)
	}
	wantPanic := func(what string, fn func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", what)
			}
		}()
		fn()
	}
	wantPanic("WithName(\"\")", func() { middleware.LimitAll(store, sluice.PerMinute(1), middleware.WithName("")) })
	wantPanic("WithName with a newline", func() { middleware.LimitAll(store, sluice.PerMinute(1), middleware.WithName("a\nb")) })
}

// kindSeq makes a kind no other test uses, so the names the one-liners of
// that kind get are known whatever ran before.
var kindSeq atomic.Int64

// Unnamed one-liners of a kind are named by the order they are made in.
func TestOneLinerNamesFollowTheOrderMade(t *testing.T) {
	kind := fmt.Sprintf("seq%d", kindSeq.Add(1))
	key := keyfunc.New(kind, func(*http.Request) (string, error) { return "x", nil })
	store, _ := newMemstore(t)
	var names []string
	for range 3 {
		resp := send(t, serve(t, middleware.LimitBy(store, sluice.PerMinute(10), key), &okHandler{}), http.MethodGet, "/", nil)
		name, _ := remaining(t, resp.Header.Get("RateLimit"))
		names = append(names, name)
	}
	named := send(t, serve(t, middleware.LimitBy(store, sluice.PerMinute(10), key, middleware.WithName("named")), &okHandler{}), http.MethodGet, "/", nil)
	if name, _ := remaining(t, named.Header.Get("RateLimit")); name != "named" {
		t.Fatalf("named one-liner: %q", name)
	}
	if want := []string{kind, kind + "-2", kind + "-3"}; fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("names %q, want %q", names, want)
	}
	// A named one-liner takes no place in the order.
	resp := send(t, serve(t, middleware.LimitBy(store, sluice.PerMinute(10), key), &okHandler{}), http.MethodGet, "/", nil)
	if name, _ := remaining(t, resp.Header.Get("RateLimit")); name != kind+"-4" {
		t.Fatalf("fourth unnamed one-liner named %q, want %q", name, kind+"-4")
	}
}

// An httprate key function says "no key" with "": the request skips the
// rule (a per-IP rule still counts it), never a bucket shared by every
// anonymous request and never a 400, unless the key is required.
func TestOneLinerSkipsAnEmptyIdentity(t *testing.T) {
	store, _ := newMemstore(t)
	accountOf := func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil } // httprate's shape
	r := chi.NewRouter()
	perAccount := middleware.LimitBy(store, sluice.PerMinute(1), keyfunc.New("account", accountOf))
	r.With(perAccount, middleware.LimitByIP(store, sluice.PerMinute(3))).Post("/login", func(http.ResponseWriter, *http.Request) {})
	r.With(middleware.LimitBy(store, sluice.PerMinute(1), keyfunc.New("account", accountOf).Required())).Post("/strict", func(http.ResponseWriter, *http.Request) {})
	srv := httptest.NewServer(r)
	defer srv.Close()

	alice := http.Header{"X-User": {"alice"}}
	var got []int
	for _, h := range []http.Header{nil, nil, alice, alice, nil} {
		got = append(got, send(t, srv, http.MethodPost, "/login", h).StatusCode)
	}
	// Anonymous attempts escape the per-account rule; the per-IP rule
	// counts every attempt and refuses the fourth.
	if want := []int{200, 200, 200, 429, 429}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	if resp := send(t, srv, http.MethodPost, "/strict", nil); resp.StatusCode != http.StatusBadRequest || !strings.Contains(problem(t, resp).Detail, "lacks the identity") {
		t.Fatalf("required key, no identity: %d, want 400 saying the identity is lacking", resp.StatusCode)
	}
}

// The X-API-Key header sent twice gets 400 saying it was duplicated,
// without echoing either value.
func TestDuplicatedKeyHeaderIsSaidSo(t *testing.T) {
	store, _ := newMemstore(t)
	srv := serve(t, middleware.LimitBy(store, sluice.PerMinute(5), keyfunc.APIKey("X-API-Key")), &okHandler{})
	resp := send(t, srv, http.MethodGet, "/", http.Header{"X-Api-Key": {"sk_live_ONE", "sk_live_TWO"}})
	p := problem(t, resp)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(p.Detail, "X-Api-Key header was duplicated") {
		t.Fatalf("%d, detail %q; want 400 saying the X-Api-Key header was duplicated", resp.StatusCode, p.Detail)
	}
	if strings.Contains(p.Detail, "sk_live") {
		t.Fatalf("detail %q echoes a key", p.Detail)
	}
}

// send makes one request to srv and returns the response, its body
// closed when the test ends.
func send(t *testing.T, srv *httptest.Server, method, path string, hdr http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

var (
	policyItem = regexp.MustCompile(`^"([^"]+)";q=(\d+);w=\d+$`)
	limitItem  = regexp.MustCompile(`^"([^"]+)";r=(\d+)(;t=\d+)?$`)
)

// quotas returns the quota of each policy of a RateLimit-Policy field.
func quotas(t *testing.T, field string) map[string]int {
	t.Helper()
	m := map[string]int{}
	for _, item := range strings.Split(field, ", ") {
		p := policyItem.FindStringSubmatch(item)
		if p == nil {
			t.Fatalf("RateLimit-Policy item %q", item)
		}
		m[p[1]], _ = strconv.Atoi(p[2])
	}
	return m
}

// remaining returns the policy and the remaining quota of a RateLimit field.
func remaining(t *testing.T, field string) (string, int) {
	t.Helper()
	p := limitItem.FindStringSubmatch(field)
	if p == nil {
		t.Fatalf("RateLimit %q", field)
	}
	n, _ := strconv.Atoi(p[2])
	return p[1], n
}
