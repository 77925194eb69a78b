// Command httprate is the chi quickstart written with the one-liners that
// mirror httprate's: every route limited per API key, and login attempts
// limited per account (the X-User header stands in for the account) and
// per client IP, since attempts that name no account skip the per-account
// rule.
package main

import (
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/go-chi/chi/v5"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/keyfunc/chikey"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/store/redisstore"
)

func main() {
	store := redisstore.MustNew(redisstore.MustNewClient("localhost:6379"), redisstore.Config{Secret: []byte(os.Getenv("SLUICE_SECRET"))})
	r := chi.NewRouter()
	r.Use(middleware.LimitBy(store, sluice.PerMinute(600), keyfunc.APIKey("X-API-Key")))
	perAccount := middleware.LimitBy(store, sluice.PerMinute(5), keyfunc.Join(keyfunc.Header("X-User"), chikey.Endpoint(r)))
	r.With(perAccount, middleware.LimitByIP(store, sluice.PerMinute(20))).Post("/login", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "welcome") })
	r.Get("/items", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "items") })
	log.Fatal(http.ListenAndServe(":8080", r))
}
