package middleware_test

import (
	"context"
	"fmt"
	"github.com/sluicehq/sluice/decide"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/keyfunc/chikey"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// The limiter in front of an http.ServeMux: 3 requests a minute per client
// IP. The fourth request within the minute gets 429 with Retry-After and a
// problem+json body. (The store's clock is a manual one so that the output
// does not depend on how fast this runs; a server uses memstore.Config{}.)
func ExampleLimit() {
	store := memstore.New(memstore.Config{Clock: storetest.NewClock(time.Unix(1_700_000_000, 0))})
	defer store.Close(context.Background())

	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "hello\n")
	})
	set := rules.MustNew(rules.Rule{
		Name: "per-ip", Key: keyfunc.ClientIP(),
		Limit: sluice.PerMinute(3),
	})
	handler := middleware.Limit(store, set)(mux)

	for i := 1; i <= 4; i++ {
		req := httptest.NewRequest("GET", "/hello", nil)
		req.RemoteAddr = "198.51.100.7:40000"
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)

		h := rec.Header()
		fmt.Printf("request %d: %d\n", i, rec.Code)
		fmt.Printf("  RateLimit-Policy: %s\n  RateLimit: %s\n", h.Get("RateLimit-Policy"), h.Get("RateLimit"))
		if rec.Code == http.StatusTooManyRequests {
			fmt.Printf("  Retry-After: %s\n  Content-Type: %s\n  %s", h.Get("Retry-After"), h.Get("Content-Type"), rec.Body)
		}
	}
	// Output:
	// request 1: 200
	//   RateLimit-Policy: "per-ip";q=3;w=60
	//   RateLimit: "per-ip";r=2;t=20
	// request 2: 200
	//   RateLimit-Policy: "per-ip";q=3;w=60
	//   RateLimit: "per-ip";r=1;t=40
	// request 3: 200
	//   RateLimit-Policy: "per-ip";q=3;w=60
	//   RateLimit: "per-ip";r=0;t=60
	// request 4: 429
	//   RateLimit-Policy: "per-ip";q=3;w=60
	//   RateLimit: "per-ip";r=0;t=20
	//   Retry-After: 20
	//   Content-Type: application/problem+json
	//   {"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Quota Exceeded","status":429,"detail":"Rate limit policy \"per-ip\" is exhausted; retry in 20 s.","violated-policies":["per-ip"]}
}

// A custom answer for refused requests. The rate-limit headers,
// Retry-After and Cache-Control are already set when the handler runs.
func ExampleWithDenyHandler() {
	store := memstore.New(memstore.Config{Clock: storetest.NewClock(time.Unix(1_700_000_000, 0))})
	defer store.Close(context.Background())

	set := rules.MustNew(rules.Rule{
		Name: "per-ip", Key: keyfunc.ClientIP(),
		Limit: sluice.PerMinute(1),
	})
	deny := func(w http.ResponseWriter, _ *http.Request, d middleware.Denial) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprintf(w, "slow down: %s, try again in %v\n", strings.Join(d.Policies, ", "), d.RetryAfter)
	}
	limiter, err := middleware.New(store, set, middleware.WithDenyHandler(deny))
	if err != nil {
		panic(err)
	}
	handler := limiter.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	}))

	for range 2 {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		fmt.Printf("%d Retry-After=%q Cache-Control=%q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Header().Get("Cache-Control"), rec.Body)
	}
	// Output:
	// 200 Retry-After="" Cache-Control="" ok
	// 429 Retry-After="60" Cache-Control="no-store" slow down: per-ip, try again in 1m0s
}

// With chi, install the limiter for every route with r.Use. The endpoint
// key comes from chi's routing tree, so /users/1 and /users/2 share the
// bucket of GET /users/{id}. Here with the draft-06 header fields.
func ExampleLimiter_Handler() {
	store := memstore.New(memstore.Config{Clock: storetest.NewClock(time.Unix(1_700_000_000, 0))})
	defer store.Close(context.Background())

	r := chi.NewRouter()
	set := rules.MustNew(rules.Rule{
		Name: "per-endpoint", Key: chikey.Endpoint(r),
		Limit: sluice.PerMinute(2),
	})
	limiter, err := middleware.New(store, set, decide.WithHeaders(headers.Draft06))
	if err != nil {
		panic(err)
	}
	r.Use(limiter.Handler)
	r.Get("/users/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "user %s\n", chi.URLParam(r, "id"))
	})
	r.Get("/health", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	})

	for _, path := range []string{"/users/1", "/users/2", "/users/3", "/health"} {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		h := rec.Header()
		fmt.Printf("%-9s %d limit=%s remaining=%s reset=%s\n", path, rec.Code,
			h.Get("RateLimit-Limit"), h.Get("RateLimit-Remaining"), h.Get("RateLimit-Reset"))
	}
	// Output:
	// /users/1  200 limit=2 remaining=1 reset=30
	// /users/2  200 limit=2 remaining=0 reset=60
	// /users/3  429 limit=2 remaining=0 reset=30
	// /health   200 limit=2 remaining=1 reset=30
}

// The one-liners: each client address limited on its own, as
// httprate.LimitByIP does, over any store; named here (unnamed, the
// first LimitByIP a program makes is "ip", the next "ip-2", ...).
func ExampleLimitByIP() {
	store := memstore.New(memstore.Config{})
	defer store.Close(context.Background())
	h := middleware.LimitByIP(store, sluice.PerMinute(2), middleware.WithName("per-ip"))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for range 3 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		fmt.Println(rec.Code, rec.Header().Get("RateLimit"))
	}
	// Output:
	// 200 "per-ip";r=1;t=30
	// 200 "per-ip";r=0;t=60
	// 429 "per-ip";r=0;t=30
}
