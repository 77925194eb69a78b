// Command nethttp is the shortest complete program: 100 requests a minute
// per client IP on an http.ServeMux, counted in Redis.
package main

import (
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/redisstore"
)

func main() {
	client := redisstore.MustNewClient("localhost:6379") // or a redis:// URL, or a cluster's addresses
	store := redisstore.MustNew(client, redisstore.Config{Secret: []byte(os.Getenv("SLUICE_SECRET"))})
	perIP := rules.MustNew(rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(100)})
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	log.Fatal(http.ListenAndServe(":8080", middleware.Limit(store, perIP)(mux)))
}
