// Command cluster limits per client IP on a Redis Cluster: the store takes
// a cluster client as it takes a single node's. A cluster known by one
// address (a managed service's configuration endpoint) takes
// redisstore.NewClusterClient(addr); a Sentinel-managed primary,
// redisstore.NewFailoverClient("mymaster", "10.0.0.1:26379", "10.0.0.2:26379").
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
	client, err := redisstore.NewClient("10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000")
	if err != nil {
		log.Fatal(err)
	}
	store := redisstore.MustNew(client, redisstore.Config{Secret: []byte(os.Getenv("SLUICE_SECRET"))})
	perIP := rules.MustNew(rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(100)})
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	log.Fatal(http.ListenAndServe(":8080", middleware.Limit(store, perIP)(mux)))
}
