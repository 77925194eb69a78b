package chikey_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/keyfunc/chikey"
)

func TestClientIPFromChiMiddleware(t *testing.T) {
	cases := []struct {
		name   string
		mw     func(http.Handler) http.Handler
		remote string
		xff    string
		want   string // "" means ErrNoKey
	}{
		{"remote_addr", middleware.ClientIPFromRemoteAddr, "192.0.2.1:1", "", "192.0.2.1"},
		{"remote_addr_v6_grouped", middleware.ClientIPFromRemoteAddr, "[2001:db8:1:2::7]:1", "", "2001:db8:1:2::"},
		{"remote_addr_zone_stripped", middleware.ClientIPFromRemoteAddr, "[fe80::1%eth0]:1", "", "fe80::"},
		{"xff_trusted_peer", middleware.ClientIPFromXFF("10.0.0.0/8"), "10.0.0.1:1", "6.6.6.6, 203.0.113.1", "203.0.113.1"},
		{"xff_untrusted_peer", middleware.ClientIPFromXFF("10.0.0.0/8"), "198.51.100.7:1", "203.0.113.1", "198.51.100.7"},
		{"xff_malformed_fails_closed", middleware.ClientIPFromXFF("10.0.0.0/8"), "10.0.0.1:1", "203.0.113.1, junk", ""},
		{"no_middleware", nil, "192.0.2.1:1", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var key string
			var err error
			r := chi.NewRouter()
			if tc.mw != nil {
				r.Use(tc.mw)
			}
			r.Get("/", func(_ http.ResponseWriter, req *http.Request) { key, err = chikey.ClientIP().Identity(req) })
			req := httptest.NewRequest("GET", "/", nil)
			req.RemoteAddr = tc.remote
			if tc.xff != "" {
				req.Header.Set("X-Forwarded-For", tc.xff)
			}
			r.ServeHTTP(httptest.NewRecorder(), req)
			if tc.want == "" {
				if !errors.Is(err, keyfunc.ErrNoKey) || key != "" {
					t.Fatalf("got %q, %v; want ErrNoKey", key, err)
				}
				return
			}
			if err != nil || key != tc.want {
				t.Fatalf("got %q, %v; want %q", key, err, tc.want)
			}
		})
	}
}
