// Command example limits an HTTP server to 2 requests a minute per client
// address, with sluice's metrics recorded by OpenTelemetry: it sends three
// requests, then prints what the meter provider exports on shutdown
// (stdout here; OTLP or Prometheus in a service).
package main

import (
	"context"
	"fmt"
	"github.com/sluicehq/sluice/decide"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	sluiceotel "github.com/sluicehq/sluice/otel"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

func main() {
	exporter, err := stdoutmetric.New(stdoutmetric.WithPrettyPrint())
	if err != nil {
		log.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exporter)))
	rec, err := sluiceotel.New(mp)
	if err != nil {
		log.Fatal(err)
	}

	// Over Redis, redisstore.Config{Events: rec} is the one place to
	// attach it. In process, the store and the middleware each get it.
	store := memstore.New(memstore.Config{Events: rec})
	defer store.Close(context.Background())
	set := rules.MustNew(rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(2)})
	limit := middleware.Limit(store, set, decide.WithObserver(rec))
	srv := httptest.NewServer(limit(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "hello")
	})))
	defer srv.Close()

	for range 3 {
		resp, err := http.Get(srv.URL)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Println(resp.Status)
	}
	if err := mp.Shutdown(context.Background()); err != nil { // exports
		log.Fatal(err)
	}
}
