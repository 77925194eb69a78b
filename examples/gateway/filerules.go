package main

import (
	"github.com/sluicehq/sluice/rules"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/sluicehq/sluice/keyfunc/chikey"
	"github.com/sluicehq/sluice/rules/rulefile"
)

type planKey struct{}

// planOf returns the plan the auth middleware recorded for the request's
// API key, or "" for a request without one.
func planOf(r *http.Request) string {
	p, _ := r.Context().Value(planKey{}).(string)
	return p
}

// fileConfig tells a rule file where the demo keeps users, plans and
// route patterns. The limiter runs in r.Use, before routing, so route
// patterns are looked up in router.
func fileConfig(router chi.Routes) rulefile.LoadConfig {
	return rulefile.LoadConfig{
		User:     userFrom,
		Plan:     planOf,
		Endpoint: chikey.Endpoint(router),
	}
}

// fileRules returns a rulesSource that watches the rule file at path, and
// where it stores the watcher, for the caller to close.
func fileRules(path string, log *slog.Logger, w **rulefile.Watcher) rulesSource {
	return func(router chi.Routes) (rules.Source, error) {
		watcher, err := rulefile.Watch(path, fileConfig(router), rulefile.WatchConfig{Logger: log})
		if err != nil {
			return nil, err
		}
		*w = watcher
		return watcher, nil
	}
}
