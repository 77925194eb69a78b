package chikey_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/keyfunc/chikey"
)

// A limiter installed globally with r.Use runs before chi has routed the
// request; chikey.Endpoint looks the pattern up, also in mounted
// sub-routers.
func ExampleEndpoint() {
	r := chi.NewRouter()
	r.Use(func(next http.Handler) http.Handler { // stands in for the limiter
		key := chikey.Endpoint(r)
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			k, _ := key.Identity(req)
			fmt.Println(req.URL.Path, "=>", k)
			next.ServeHTTP(w, req)
		})
	})
	r.Get("/users/{id}", func(http.ResponseWriter, *http.Request) {})
	api := chi.NewRouter()
	api.Get("/items/{id}", func(http.ResponseWriter, *http.Request) {})
	r.Mount("/api", api)

	for _, p := range []string{"/users/1", "/users/2", "/api/items/3", "/no/such/page"} {
		r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", p, nil))
	}
	// Output:
	// /users/1 => GET /users/{id}
	// /users/2 => GET /users/{id}
	// /api/items/3 => GET /api/items/{id}
	// /no/such/page => GET <unmatched>
}

// Reuse the client IP resolved by chi's ClientIPFrom* middleware, joined
// with the endpoint for a per-client, per-route key.
func ExampleClientIP() {
	r := chi.NewRouter()
	r.Use(middleware.ClientIPFromXFF("10.0.0.0/8"))
	key := keyfunc.Join(chikey.ClientIP(), chikey.Endpoint(r))
	r.Get("/users/{id}", func(_ http.ResponseWriter, req *http.Request) {
		fmt.Println(key.Identity(req))
	})

	req := httptest.NewRequest("GET", "/users/7", nil)
	req.RemoteAddr = "10.0.0.1:4711"
	req.Header.Set("X-Forwarded-For", "203.0.113.1")
	r.ServeHTTP(httptest.NewRecorder(), req)
	// Output:
	// 11:203.0.113.1,15:GET /users/{id}, <nil>
}
