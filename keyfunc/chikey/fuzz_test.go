package chikey_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/sluicehq/sluice/internal/ident"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/keyfunc/chikey"
)

// FuzzEndpointMatchesRouting: for any method and path, the key looked up
// before routing is the key of the pattern chi actually routes the request
// by (or the Unmatched key), so it is always a registered pattern, never
// part of the raw path.
func FuzzEndpointMatchesRouting(f *testing.F) {
	for _, tc := range routeCases {
		f.Add(tc.method, tc.path)
	}
	f.Add("GET", "")
	f.Add("GET", "*")
	f.Add("GET", "users/1")
	f.Add("OPTIONS", "/api/v1/deep")
	f.Add("GET", "/api/v1/x/{y}")

	var routed string
	capture := func(_ http.ResponseWriter, r *http.Request) { routed = r.Pattern }
	r := chi.NewRouter()
	r.Get("/", capture)
	r.Get("/users/{id}", capture)
	r.Get("/users/{id}/", capture)
	r.Handle("/any/{x}", http.HandlerFunc(capture))
	r.Get("/files/*", capture)
	r.Get("/re/{n:[0-9]+}", capture)
	api := chi.NewRouter()
	api.Get("/", capture)
	api.Get("/items/{id}", capture)
	api.Route("/v1", func(v chi.Router) {
		v.Get("/x/{y}", capture)
		v.Mount("/deep", http.HandlerFunc(capture))
	})
	r.Mount("/api", api)
	r.Route("/org/{org}", func(g chi.Router) { g.Get("/p/{q}", capture) })
	r.Mount("/static", http.HandlerFunc(capture))
	key := chikey.Endpoint(r)

	f.Fuzz(func(t *testing.T, method, path string) {
		req := &http.Request{Method: method, URL: &url.URL{Path: path}, Header: http.Header{}}
		got, err := key.Identity(req)
		if err != nil {
			t.Fatalf("error %v", err)
		}
		routed = ""
		r.ServeHTTP(discard{}, req)
		if want := ident.EndpointKey(method, routed); got != want {
			t.Fatalf("%q %q: lookup key %q, routed key %q", method, path, got, want)
		}
		if _, p, _ := strings.Cut(got, " "); p != keyfunc.Unmatched && !strings.HasPrefix(p, "/") {
			t.Fatalf("key %q", got)
		}
	})
}

// discard is a ResponseWriter that drops everything.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
