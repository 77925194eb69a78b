package compat_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-chi/httprate"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/store/memstore"
)

// mw is a middleware: httprate's and sluice's have the same shape.
type mw = func(http.Handler) http.Handler

// newStore returns a memory store closed when the test ends.
func newStore(t *testing.T) *memstore.Store {
	s := memstore.New(memstore.Config{})
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// loginApp is httprate's usual shape: a limit on every route and a
// stricter one on login, served over real HTTP.
func loginApp(t *testing.T, global, login mw) *httptest.Server {
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	mux := http.NewServeMux()
	mux.Handle("POST /login", login(ok))
	mux.Handle("GET /", ok)
	srv := httptest.NewServer(global(mux))
	t.Cleanup(srv.Close)
	return srv
}

func call(t *testing.T, srv *httptest.Server, method, path string, hdr ...string) *http.Response {
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
	resp.Body.Close()
	return resp
}

// The two per-IP limiters of httprate's shape count apart in httprate and
// in sluice alike: after 4 logins, 95 of the 100 requests a minute are
// left for GET /, and the sixth login is refused.
func TestHTTPRateShapeKeepsTwoLimits(t *testing.T) {
	store := newStore(t)
	xrl := decide.WithHeaders(headers.XRateLimit)
	apps := map[string][2]mw{
		//lint:ignore SA1019 deprecated in httprate and still the shape its users have
		"httprate": {httprate.LimitByIP(100, time.Minute), httprate.LimitByIP(5, time.Minute)},
		"sluice":   {middleware.LimitByIP(store, sluice.PerMinute(100), xrl), middleware.LimitByIP(store, sluice.PerMinute(5), xrl)},
	}
	for name, lims := range apps {
		t.Run(name, func(t *testing.T) {
			srv := loginApp(t, lims[0], lims[1])
			var codes []int
			for range 4 {
				codes = append(codes, call(t, srv, http.MethodPost, "/login").StatusCode)
			}
			home := call(t, srv, http.MethodGet, "/")
			codes = append(codes, home.StatusCode)
			for range 2 {
				codes = append(codes, call(t, srv, http.MethodPost, "/login").StatusCode)
			}
			if want := []int{200, 200, 200, 200, 200, 200, 429}; fmt.Sprint(codes) != fmt.Sprint(want) {
				t.Fatalf("statuses %v, want %v", codes, want)
			}
			if got := home.Header.Get("X-RateLimit-Remaining"); got != "95" {
				t.Fatalf("GET / after 4 logins: X-RateLimit-Remaining %q, want 95", got)
			}
		})
	}
}

// httprate's "no key" is an empty string. httprate counts every such
// request in one shared bucket; sluice reads it as no identity, and the
// rule skips the request. A key function's error: httprate 428, sluice 400.
func TestHTTPRateEmptyKeyAndKeyError(t *testing.T) {
	store := newStore(t)
	accountOf := func(r *http.Request) (string, error) {
		if r.Header.Get("X-Bad") != "" {
			return "", fmt.Errorf("unreadable account")
		}
		return r.Header.Get("X-User"), nil
	}
	cases := []struct {
		name      string
		limit     mw
		anonymous []int
		keyError  int
	}{
		{"httprate", httprate.LimitBy(1, time.Minute, accountOf), []int{200, 429, 429}, http.StatusPreconditionRequired},
		{"sluice", middleware.LimitBy(store, sluice.PerMinute(1), keyfunc.New("account", accountOf)), []int{200, 200, 200}, http.StatusBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := loginApp(t, func(h http.Handler) http.Handler { return h }, tc.limit)
			var codes []int
			for range 3 {
				codes = append(codes, call(t, srv, http.MethodPost, "/login").StatusCode)
			}
			if fmt.Sprint(codes) != fmt.Sprint(tc.anonymous) {
				t.Fatalf("anonymous logins: %v, want %v", codes, tc.anonymous)
			}
			if got := call(t, srv, http.MethodPost, "/login", "X-User", "alice").StatusCode; got != http.StatusOK {
				t.Fatalf("alice's first login: %d", got)
			}
			if got := call(t, srv, http.MethodPost, "/login", "X-Bad", "1").StatusCode; got != tc.keyError {
				t.Fatalf("key error: %d, want %d", got, tc.keyError)
			}
		})
	}
}
