package sluiceotel_test

import (
	"context"
	"fmt"
	"github.com/sluicehq/sluice/decide"
	"net/http"
	"net/http/httptest"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	sluiceotel "github.com/sluicehq/sluice/otel"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// A middleware's decisions, recorded as OpenTelemetry metrics. A manual
// reader stands in for the exporter (OTLP, Prometheus) a service would
// give its meter provider.
func Example() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	rec, err := sluiceotel.New(mp)
	if err != nil {
		fmt.Println(err)
		return
	}

	store := memstore.New(memstore.Config{Events: rec})
	defer store.Close(context.Background())
	set := rules.MustNew(rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(2)})
	h := middleware.Limit(store, set, decide.WithObserver(rec))(http.NotFoundHandler())
	for range 3 {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		h.ServeHTTP(httptest.NewRecorder(), r)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name != "sluice.decisions" {
			continue
		}
		for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
			rule, _ := p.Attributes.Value("sluice.rule")
			outcome, _ := p.Attributes.Value("sluice.outcome")
			fmt.Println(m.Name, rule.AsString(), outcome.AsString(), p.Value)
		}
	}
	// Unordered output:
	// sluice.decisions per-ip allowed 2
	// sluice.decisions per-ip denied 1
}
