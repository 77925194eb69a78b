// Command rulefile limits an http.ServeMux by the rules in rules.yaml, which
// it reads again every 5 seconds and at once on SIGHUP. A file with a
// mistake is refused and logged, and the last good rules stay in force.
// Run it from this directory: go run .
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules/rulefile"
	"github.com/sluicehq/sluice/store/memstore"
)

func main() {
	store := memstore.New(memstore.Config{})
	defer store.Close(context.Background())
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "item", r.PathValue("id")) })
	set, err := rulefile.Watch("rules.yaml", rulefile.LoadConfig{Endpoint: keyfunc.EndpointFromMux(mux)}, rulefile.WatchConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer set.Close()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			_ = set.Reload() // a refused file is logged; the last good rules stay
		}
	}()
	log.Fatal(http.ListenAndServe(":8080", middleware.Limit(store, set)(mux)))
}
