// Command cluster limits per client IP on a Redis Cluster: the store takes
// a cluster client as it takes a single node's. For a Sentinel-managed
// primary, pass redis.NewFailoverClient(&redis.FailoverOptions{MasterName:
// "mymaster", SentinelAddrs: ..., MaxRetries: -1, ContextTimeoutEnabled: true}).
package main

import (
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/redisstore"
)

func main() {
	client := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 []string{"10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"},
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
	})
	store := redisstore.MustNew(client, redisstore.Config{Secret: []byte(os.Getenv("SLUICE_SECRET"))})
	perIP := rules.MustNew(rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(100)})
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	log.Fatal(http.ListenAndServe(":8080", middleware.Limit(store, perIP)(mux)))
}
