package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
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
