package main

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/keyfunc/chikey"
	"github.com/sluicehq/sluice/rules"
)

type userKey struct{}

// userFrom reads the signed-in user the auth middleware stored.
func userFrom(ctx context.Context) (string, bool) {
	u, ok := ctx.Value(userKey{}).(string)
	return u, ok && u != ""
}

// gatewayRules are the demo's rules. Every route is behind the per-IP rule,
// so 51 quick requests from one client see a 429 anywhere, / included.
func gatewayRules(router chi.Routes) (*rules.Set, error) {
	userEndpoint := keyfunc.Join(keyfunc.User(userFrom), chikey.Endpoint(router))
	apiKey := keyfunc.APIKey("X-API-Key")
	return rules.New(
		rules.Rule{
			Name: "per-ip", Key: keyfunc.ClientIP(),
			Limit: sluice.PerMinute(50),
		},
		rules.Rule{
			Name: "per-api-key", Key: apiKey,
			Limit: sluice.PerMinute(20),
			Match: func(r *http.Request) bool { return r.Header.Get("X-API-Key") != "" },
		},
		rules.Rule{
			Name: "per-user-endpoint", Key: userEndpoint,
			Limit: sluice.PerMinute(10),
			Match: func(r *http.Request) bool { _, ok := userFrom(r.Context()); return ok },
		},
		rules.Rule{
			Name: "global", Key: keyfunc.Global(),
			Limit:  sluice.PerMinute(5000).WithBurst(500),
			OnFail: rules.FailClosed, // the backend's own capacity: never exceed it blindly
		},
	)
}
