// Command chiuser limits a chi router per signed-in user: 60 requests a
// minute per user on the routes behind authentication, 600 a minute per API
// key on every route, and on POST /login 5 attempts a minute per account
// and 20 per client IP. Requests without a user or an API key are not
// counted by those rules. chi's own middleware package is imported as chimw
// beside sluice's middleware.
//
// The per-account login rule slows password guessing against one account
// from many addresses, but a rule skips a request that lacks its identity,
// so an attempt that names no account would be unlimited: the per-IP rule
// beside it counts every attempt, anonymous ones included.
//
// One operator handler, on 127.0.0.1:9090, inspects and resets the buckets
// of all three limiters (curl -d '{"rule":"login","identity":"alice"}'
// localhost:9090/reset).
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/go-chi/chi/v5"
	chimw "github.com/go-chi/chi/v5/middleware"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/admin"
	"github.com/sluicehq/sluice/store/redisstore"
)

func main() {
	client, err := redisstore.NewClient("localhost:6379") // or a redis:// URL
	if err != nil {
		log.Fatal(err)
	}
	store := redisstore.MustNew(client, redisstore.Config{Secret: []byte(os.Getenv("SLUICE_SECRET"))})
	perKey := rules.MustNew(rules.Rule{Name: "per-api-key", Key: keyfunc.APIKey("X-API-Key"), Limit: sluice.PerMinute(600)})
	login := rules.MustNew(
		rules.Rule{Name: "login", Key: keyfunc.New("account", accountOf), Limit: sluice.PerMinute(5)},
		rules.Rule{Name: "login-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(20)}, // also the attempts that name no account
	)
	perUser := rules.MustNew(rules.Rule{Name: "per-user", Key: keyfunc.User(userOf), Limit: sluice.PerMinute(60)})
	r := chi.NewRouter()
	r.Use(chimw.Logger, chimw.Recoverer)
	r.Use(middleware.Limit(store, perKey)) // every route
	r.With(middleware.Limit(store, login)).Post("/login", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "welcome") })
	r.Group(func(r chi.Router) {
		r.Use(authenticate, middleware.Limit(store, perUser)) // after authentication, which finds the user
		r.Get("/account", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "yours") })
		r.Get("/orders", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "your orders") })
	})
	ops := admin.MustNew(store, perKey, admin.WithRules(login, perUser))  // one operator handler for the three limiters
	go func() { log.Fatal(http.ListenAndServe("127.0.0.1:9090", ops)) }() // operators only: behind your authentication
	log.Fatal(http.ListenAndServe(":8080", r))
}

// accountOf is the account a login attempt names: its Basic auth user.
func accountOf(r *http.Request) (string, error) {
	user, _, ok := r.BasicAuth()
	if !ok || user == "" {
		return "", keyfunc.ErrMissing // no account: the login rule skips the attempt, login-ip counts it
	}
	return user, nil
}

type userKey struct{}

// userOf finds the user authenticate put in the context.
func userOf(ctx context.Context) (string, bool) {
	user, ok := ctx.Value(userKey{}).(string)
	return user, ok && user != ""
}

// authenticate stands for your authentication: it puts the user in the context.
func authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _, _ := r.BasicAuth() // check the password in a real application
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
	})
}
