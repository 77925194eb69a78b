package chikey_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/keyfunc/chikey"
)

// recorder is a limiter stand-in: middleware that records, per test case,
// the key its KeyFunc gives.
type recorder struct {
	fn   keyfunc.Key
	mu   sync.Mutex
	keys map[string]string
}

func newRecorder(fn keyfunc.Key) *recorder {
	return &recorder{fn: fn, keys: map[string]string{}}
}

func (rec *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k, err := rec.fn.Identity(r)
		if err != nil {
			k = "error: " + err.Error()
		}
		rec.mu.Lock()
		rec.keys[r.Header.Get("X-Case")] = k
		rec.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// routedKeys records, per test case, the key keyfunc.Endpoint gives in the
// final handler, where chi has set r.Pattern: the reference the lookup
// must agree with.
var routedKeys sync.Map

func handler(w http.ResponseWriter, r *http.Request) {
	k, err := keyfunc.Endpoint().Identity(r)
	if err != nil {
		k = "error: " + err.Error()
	}
	routedKeys.Store(r.Header.Get("X-Case"), k)
	w.WriteHeader(http.StatusNoContent)
}

type routeCase struct {
	method, path, want string
}

var routeCases = []routeCase{
	{"GET", "/", "GET /"},
	{"GET", "/users/1", "GET /users/{id}"},
	{"GET", "/users/2", "GET /users/{id}"},
	{"GET", "/users/3/", "GET /users/{id}"}, // chi formats ".../{id}/" like ".../{id}"
	{"PUT", "/users/4", "PUT /users/{id}"},
	{"GET", "/users/a%2Fb", "GET /users/{id}"}, // routed by RawPath, like chi
	{"GET", "/files/a/b/c.txt", "GET /files/*"},
	{"GET", "/re/12", "GET /re/{n:[0-9]+}"},
	// mounted sub-router
	{"GET", "/api", "GET /api"},
	{"GET", "/api/", "GET /api"},
	{"GET", "/api/items/7", "GET /api/items/{id}"},
	{"GET", "/api/items/8", "GET /api/items/{id}"},
	{"POST", "/api/items/9", "POST /api/items/{id}"},
	{"GET", "/api/v1/x/1", "GET /api/v1/x/{y}"},
	{"GET", "/api/v1/deep/anything/here", "GET /api/v1/deep/*"},
	// Route() group with a parameter in the mount pattern
	{"GET", "/org/acme/p/1", "GET /org/{org}/p/{q}"},
	{"GET", "/org/umbrella/p/2", "GET /org/{org}/p/{q}"},
	// a sub-router's mount point routes to its "/" route, if any
	{"GET", "/api/v1", "GET <unmatched>"},
	{"GET", "/api/v1/", "GET <unmatched>"},
	{"GET", "/org/acme", "GET <unmatched>"},
	{"GET", "/org/acme/", "GET <unmatched>"},
	{"GET", "/shared", "GET /shared"}, // a real route on the mount point
	{"POST", "/shared", "POST <unmatched>"},
	{"GET", "/shared/x", "GET /shared/x"},
	// mounted plain handler
	{"GET", "/static/css/a.css", "GET /static/*"},
	// route added with With()
	{"GET", "/with/5", "GET /with/{id}"},
	// unmatched: 404, 405, unknown methods, inside and outside sub-routers
	{"GET", "/nope/1", "GET <unmatched>"},
	{"GET", "/nope/2", "GET <unmatched>"},
	{"GET", "/re/ab", "GET <unmatched>"},
	{"GET", "/api/nope", "GET <unmatched>"},
	{"DELETE", "/users/1", "DELETE <unmatched>"},
	{"DELETE", "/api/items/1", "DELETE <unmatched>"},
	{"BREW", "/users/1", "<other> <unmatched>"},
	{"GET", "/users//1", "GET <unmatched>"},
}

// newRouter builds the test routes, calling install for each router's
// middleware stack (root and sub-routers) so tests can place the limiter.
func newRouter(rootUse, subUse func(http.Handler) http.Handler, with func(http.Handler) http.Handler) *chi.Mux {
	r := chi.NewRouter()
	if rootUse != nil {
		r.Use(rootUse)
	}
	r.Get("/", handler)
	r.Get("/users/{id}", handler)
	r.Put("/users/{id}", handler)
	r.Get("/users/{id}/", handler)
	r.Get("/files/*", handler)
	r.Get("/re/{n:[0-9]+}", handler)

	api := chi.NewRouter()
	if subUse != nil {
		api.Use(subUse)
	}
	api.Get("/", handler)
	api.Get("/items/{id}", handler)
	api.Post("/items/{id}", handler)
	api.Route("/v1", func(v chi.Router) {
		v.Get("/x/{y}", handler)
		v.Mount("/deep", http.HandlerFunc(handler))
	})
	r.Mount("/api", api)
	r.Route("/org/{org}", func(g chi.Router) {
		g.Get("/p/{q}", handler)
	})
	r.Mount("/static", http.HandlerFunc(handler))
	r.Route("/shared", func(s chi.Router) { s.Get("/x", handler) })
	r.Get("/shared", handler)
	if with != nil {
		r.With(with).Get("/with/{id}", handler)
	} else {
		r.Get("/with/{id}", handler)
	}
	return r
}

// serve sends every route case through a real server.
func serve(t *testing.T, h http.Handler) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	for i, tc := range routeCases {
		req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Case", strconv.Itoa(i))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
}

func checkKeys(t *testing.T, rec *recorder, only func(routeCase) bool) {
	t.Helper()
	for i, tc := range routeCases {
		if only != nil && !only(tc) {
			continue
		}
		id := strconv.Itoa(i)
		got, ok := rec.keys[id]
		if !ok {
			t.Errorf("%s %s: limiter not reached", tc.method, tc.path)
			continue
		}
		if got != tc.want {
			t.Errorf("%s %s: key %q, want %q", tc.method, tc.path, got, tc.want)
		}
		if routed, ok := routedKeys.Load(id); ok && routed != got {
			t.Errorf("%s %s: lookup key %q differs from the routed key %q", tc.method, tc.path, got, routed)
		}
	}
}

// TestEndpointGlobalUse is the main case: the limiter installed globally
// with r.Use runs before chi has routed the request.
func TestEndpointGlobalUse(t *testing.T) {
	rec := newRecorder(keyfunc.Key{})
	r := newRouter(rec.wrap, nil, nil)
	rec.fn = chikey.Endpoint(r)
	serve(t, r)
	checkKeys(t, rec, nil)
}

// TestEndpointNilRouterInsideChi: inside chi the router can be omitted.
func TestEndpointNilRouterInsideChi(t *testing.T) {
	rec := newRecorder(chikey.Endpoint(nil))
	serve(t, newRouter(rec.wrap, nil, nil))
	checkKeys(t, rec, nil)
}

// TestEndpointAroundRouter: the limiter wraps the router from outside, so
// there is no routing context yet.
func TestEndpointAroundRouter(t *testing.T) {
	r := newRouter(nil, nil, nil)
	rec := newRecorder(chikey.Endpoint(r))
	serve(t, rec.wrap(r))
	checkKeys(t, rec, nil)
}

// TestEndpointInSubRouterUse: the limiter in a mounted sub-router's stack,
// where chi's RoutePattern and r.Pattern are only the mount point. The
// sub-router is passed, but the request's top-level router is used.
func TestEndpointInSubRouterUse(t *testing.T) {
	rec := newRecorder(keyfunc.Key{})
	r := newRouter(nil, rec.wrap, nil)
	rec.fn = chikey.Endpoint(chi.NewRouter()) // a wrong router is overridden
	serve(t, r)
	checkKeys(t, rec, func(tc routeCase) bool { return strings.HasPrefix(tc.path, "/api") })
}

// TestEndpointWith: the limiter on one route, after routing.
func TestEndpointWith(t *testing.T) {
	rec := newRecorder(chikey.Endpoint(nil))
	serve(t, newRouter(nil, nil, rec.wrap))
	checkKeys(t, rec, func(tc routeCase) bool { return tc.path == "/with/5" })
}

// TestEndpointHonoursRoutingOverrides: chi middlewares that change the path
// or method routing uses, installed before the limiter.
func TestEndpointHonoursRoutingOverrides(t *testing.T) {
	r := chi.NewRouter()
	var got []string
	r.Use(middleware.CleanPath, middleware.GetHead)
	r.Use(func(next http.Handler) http.Handler {
		fn := chikey.Endpoint(nil)
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			k, err := fn.Identity(req)
			if err != nil {
				k = err.Error()
			}
			got = append(got, k)
			next.ServeHTTP(w, req)
		})
	})
	r.Get("/users/{id}", handler)
	for _, c := range []struct{ method, path string }{{"GET", "/users//1"}, {"HEAD", "/users/2"}} {
		r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(c.method, c.path, nil))
	}
	want := []string{"GET /users/{id}", "GET /users/{id}"}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("keys %q, want %q", got, want)
	}
}

func TestEndpointNoRouter(t *testing.T) {
	_, err := chikey.Endpoint(nil).Identity(httptest.NewRequest("GET", "/", nil))
	if !errors.Is(err, keyfunc.ErrNoKey) {
		t.Fatalf("error %v, want ErrNoKey", err)
	}
}
