// Command limiter runs export jobs at 10 a minute per tenant, without HTTP:
// a sluice.Limiter over Redis, shared by every process that runs jobs. The
// token bucket (the default) lets a tenant's first 10 go at once, then one
// every 6 s: up to 19 within a minute. For at most 10 in any minute, use
// sluice.PerMinute(10).WithBurst(1) (one every 6 s) or add
// sluice.WithAlgorithm(sluice.SlidingLog).
package main

import (
	"context"
	"log"
	"os"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/redisstore"
)

type job struct{ Tenant, Name string }

func main() {
	client, err := redisstore.NewClient("localhost:6379") // or a redis:// URL
	if err != nil {
		log.Fatal(err)
	}
	store := redisstore.MustNew(client, redisstore.Config{Secret: []byte(os.Getenv("SLUICE_SECRET"))})
	defer store.Close(context.Background())
	exports := sluice.MustNewLimiter(store, sluice.PerMinute(10))
	ctx := context.Background()
	for _, j := range []job{{"acme", "invoices"}, {"acme", "orders"}, {"globex", "invoices"}} {
		if err := exports.Wait(ctx, "export:"+j.Tenant); err != nil { // sleeps until the tenant may go
			log.Fatal(err)
		}
		log.Printf("exporting %s for %s", j.Name, j.Tenant)
	}
}
