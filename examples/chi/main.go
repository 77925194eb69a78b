// Command chi shows per-route rate limits with the chi router: a strict
// limit on one route, a looser one shared by a group of routes, and routes
// with no limit at all, all on one in-memory store.
//
//	go run ./examples/chi              # listens on :8080
//	go run ./examples/chi -addr :9090
//
// Then, from another terminal (the sixth login within a minute gets 429):
//
//	for i in $(seq 6); do curl -s -o /dev/null -w '%{http_code} ' -X POST localhost:8080/login; done; echo
//	curl -i localhost:8080/api/items
//
// The limits, all per client IP:
//
//	POST /login            5 a minute (r.With on the one route)
//	/api/...               30 a minute with bursts of 10, shared by the group
//	GET /, GET /health     no limit
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
)

func main() {
	addr := flag.String("addr", ":8080", "listen address")
	flag.Parse()

	store := memstore.New(memstore.Config{})
	defer store.Close(context.Background())

	srv := &http.Server{Addr: *addr, Handler: newRouter(store), ReadHeaderTimeout: 5 * time.Second}
	slog.Info("chi example listening", "addr", *addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "chi:", err)
		os.Exit(1)
	}
}

// perIP returns a limiter middleware with one rule counting requests per
// client IP. Each limiter has its own rule name, so each keeps its own
// buckets even though they share the store.
func perIP(store sluice.Store, name string, limit sluice.Limit) func(http.Handler) http.Handler {
	set := rules.MustNew(rules.Rule{
		Name:  name,
		Key:   keyfunc.ClientIP(), // the TCP peer: right when clients connect directly
		Limit: limit,
	})
	return middleware.Limit(store, set)
}

// newRouter returns the example's routes, limited on store.
func newRouter(store sluice.Store) http.Handler {
	r := chi.NewRouter()

	// No limit.
	r.Get("/", reply(map[string]any{"try": []string{"POST /login", "/api/items", "/api/items/42", "/health"}}))
	r.Get("/health", reply(map[string]string{"status": "ok"}))

	// One route, its own strict limit: guessing passwords gets slow. It
	// keys on the client IP, which every request has, so every attempt
	// counts, anonymous ones included (a rule keyed by the account would
	// skip attempts that name none: pair it with this one).
	r.With(perIP(store, "login", sluice.PerMinute(5))).Post("/login", reply(map[string]string{"token": "demo"}))

	// A group: every route in it counts against one shared limit.
	r.Route("/api", func(api chi.Router) {
		api.Use(perIP(store, "api", sluice.PerMinute(30).WithBurst(10)))
		api.Get("/items", reply([]string{"apple", "banana", "cherry"}))
		api.Get("/items/{id}", func(w http.ResponseWriter, r *http.Request) {
			reply(map[string]string{"id": chi.URLParam(r, "id")})(w, r)
		})
	})
	return r
}

// reply returns a handler that answers v as JSON.
func reply(v any) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
}
