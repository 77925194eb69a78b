// Command chiuser limits a chi router per signed-in user: 60 requests a
// minute per user on the routes behind authentication, 600 a minute per API
// key on every route, and 5 login attempts a minute per client IP. Requests
// without a user or an API key are not counted by those rules. chi's own
// middleware package is imported as chimw beside sluice's middleware.
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
	"github.com/sluicehq/sluice/store/redisstore"
)

func main() {
	client, err := redisstore.NewClient("localhost:6379") // or a redis:// URL
	if err != nil {
		log.Fatal(err)
	}
	store := redisstore.MustNew(client, redisstore.Config{Secret: []byte(os.Getenv("SLUICE_SECRET"))})
	perKey := rules.MustNew(rules.Rule{Name: "per-api-key", Key: keyfunc.APIKey("X-API-Key"), Limit: sluice.PerMinute(600)})
	login := rules.MustNew(rules.Rule{Name: "login", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(5)})
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
	log.Fatal(http.ListenAndServe(":8080", r))
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
