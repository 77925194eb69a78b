package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/middleware"
)

// newRouter returns the demo API with the limiter installed globally,
// logging store failures to log.
func newRouter(store sluice.Store, log *slog.Logger, opts ...middleware.Option) (http.Handler, error) {
	r := chi.NewRouter()
	set, err := gatewayRules(r)
	if err != nil {
		return nil, err
	}
	limiter, err := middleware.New(store, set, append([]middleware.Option{middleware.WithLogger(log)}, opts...)...)
	if err != nil {
		return nil, err
	}
	r.Use(fakeAuth, limiter.Handler)
	r.Get("/", reply(map[string]any{"service": "sluice demo gateway", "try": []string{"/items", "/items/42", "/me"}}))
	r.Get("/items", reply([]string{"apple", "banana", "cherry"}))
	r.Get("/items/{id}", func(w http.ResponseWriter, r *http.Request) {
		reply(map[string]string{"id": chi.URLParam(r, "id")})(w, r)
	})
	r.Get("/me", func(w http.ResponseWriter, r *http.Request) {
		user, ok := userFrom(r.Context())
		if !ok {
			user = "anonymous (send X-User: alice)"
		}
		reply(map[string]string{"user": user})(w, r)
	})
	return r, nil
}

// fakeAuth stands in for real authentication: it trusts X-User.
func fakeAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := r.Header.Get("X-User"); u != "" {
			r = r.WithContext(context.WithValue(r.Context(), userKey{}, u))
		}
		next.ServeHTTP(w, r)
	})
}

func reply(v any) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
}
