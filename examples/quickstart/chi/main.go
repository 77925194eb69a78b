// Command chi limits a chi router on Redis: 5 login attempts a minute per
// client IP on POST /login, and 600 requests a minute per API key on every
// route (requests without an X-API-Key header are not counted by that
// rule). It also uses chi's own middleware package, imported as chimw
// beside sluice's.
package main

import (
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
	client := redisstore.MustNewClient("localhost:6379") // or a redis:// URL, or a cluster's addresses
	store := redisstore.MustNew(client, redisstore.Config{Secret: []byte(os.Getenv("SLUICE_SECRET"))})
	perKey := rules.MustNew(rules.Rule{Name: "per-api-key", Key: keyfunc.APIKey("X-API-Key"), Limit: sluice.PerMinute(600)})
	login := rules.MustNew(rules.Rule{Name: "login", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(5)})
	r := chi.NewRouter()
	r.Use(chimw.Logger, chimw.Recoverer)
	r.Use(middleware.Limit(store, perKey))
	r.With(middleware.Limit(store, login)).Post("/login", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "welcome") })
	r.Get("/items", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "items") })
	log.Fatal(http.ListenAndServe(":8080", r))
}
