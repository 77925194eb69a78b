package main

import (
	"context"
	"encoding/json"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/rules"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/middleware"
)

// rulesSource supplies the limiter's rules for the demo's router: the Go
// rules of rules.go, or a rule file (see fileRules).
type rulesSource func(router chi.Routes) (rules.Source, error)

// goRules is the rulesSource of the built-in rules.
func goRules(router chi.Routes) (rules.Source, error) {
	set, err := gatewayRules(router)
	if err != nil {
		return nil, err
	}
	return set, nil
}

// newRouter returns the demo API with the limiter installed globally on
// the built-in rules, logging store failures to log.
func newRouter(store sluice.Store, log *slog.Logger, opts ...middleware.Option) (http.Handler, error) {
	return newRouterWith(store, log, goRules, opts...)
}

// newRouterWith is newRouter with the rules from src.
func newRouterWith(store sluice.Store, log *slog.Logger, src rulesSource, opts ...middleware.Option) (http.Handler, error) {
	r := chi.NewRouter()
	set, err := src(r)
	if err != nil {
		return nil, err
	}
	limiter, err := middleware.New(store, set, append([]middleware.Option{decide.WithLogger(log)}, opts...)...)
	if err != nil {
		return nil, err
	}
	r.Use(fakeAuth, limiter.Handler)
	r.Get("/", reply(map[string]any{"service": "sluice demo gateway", "try": []string{"/items", "/items/42", "/me", "/slow?ms=2000"}}))
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
	r.Get("/slow", slow)
	r.Post("/login", login)
	return r, nil
}

// fakeAuth stands in for real authentication: it trusts X-User, and
// X-Plan for the plan of an API key (free when not sent).
func fakeAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if u := r.Header.Get("X-User"); u != "" {
			ctx = context.WithValue(ctx, userKey{}, u)
		}
		if r.Header.Get("X-API-Key") != "" {
			plan := r.Header.Get("X-Plan")
			if plan == "" {
				plan = "free"
			}
			ctx = context.WithValue(ctx, planKey{}, plan)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func reply(v any) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
}
