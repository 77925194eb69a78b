// Command lease serves a hot rule's buckets from local leases: a refill
// takes up to K tokens from Redis in one call, checks spend them in process,
// and what is left goes back when the lease expires and on Close. Keys
// checked over 1,000 times a second are also split over 4 Redis keys.
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/lease"
	"github.com/sluicehq/sluice/store/redisstore"
)

func main() {
	client, err := redisstore.NewClient("localhost:6379") // or a redis:// URL
	if err != nil {
		log.Fatal(err)
	}
	shared := redisstore.MustNew(client, redisstore.Config{Secret: []byte(os.Getenv("SLUICE_SECRET"))})
	store, err := lease.New(shared, lease.Config{}) // leases sized by the instances the store counts
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close(context.Background()) // give unused tokens back
	perKey := rules.MustNew(rules.Rule{
		Name: "per-api-key", Key: keyfunc.APIKey("X-API-Key"), Limit: sluice.PerSecond(100),
		Lease: sluice.LeasePolicy{
			Enabled: true,                                           // lease this rule's buckets
			HotKeys: sluice.HotKeyPolicy{Threshold: 1000, Split: 4}, // and split keys that turn hot
		},
	})
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	log.Fatal(http.ListenAndServe(":8080", middleware.Limit(store, perKey)(mux)))
}
