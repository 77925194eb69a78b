package metrics_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
)

// The collector observes what the middleware and the Redis store report;
// here they are played by hand. In a program:
//
//	limiter, err := middleware.New(store, set, decide.WithObserver(c))
//	store, err := redisstore.New(client, redisstore.Config{Events: c})
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
func Example() {
	reg := prometheus.NewRegistry()
	c, err := metrics.New(metrics.Config{Registerer: reg})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	// A request admitted by "per-ip", with a shadow rule that would have
	// refused it.
	c.ObserveStoreCall(ctx, sluice.StoreCall{Latency: 300 * time.Microsecond, Hits: 2})
	c.Observe(ctx, sluice.Decision{Rule: "per-ip", Outcome: sluice.OutcomeAllowed})
	c.Observe(ctx, sluice.Decision{Rule: "per-ip-strict", Outcome: sluice.OutcomeShadowDenied, Shadow: true})

	// Redis times out: the breaker opens and the rule fails open.
	timeout := &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrTimeout, Ambiguous: true}
	c.ObserveStoreCall(ctx, sluice.StoreCall{Latency: 50 * time.Millisecond, Hits: 1, Err: timeout})
	c.BreakerChanged("127.0.0.1:6379", sluice.BreakerClosed, sluice.BreakerOpen)
	c.Observe(ctx, sluice.Decision{Rule: "per-ip", Outcome: sluice.OutcomeFailedOpen, Err: timeout})

	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			var v float64
			switch {
			case m.GetCounter() != nil:
				v = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				v = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				v = float64(m.GetHistogram().GetSampleCount())
			}
			if v != 0 { // skip the series that exist at zero
				fmt.Printf("%s{%s} %v\n", mf.GetName(), strings.Join(labels, ","), v)
			}
		}
	}
	// Output:
	// sluice_breaker_state{endpoint=127.0.0.1:6379} 1
	// sluice_breaker_transitions_total{endpoint=127.0.0.1:6379,from=closed,to=open} 1
	// sluice_decisions_total{outcome=allowed,rule=per-ip} 1
	// sluice_decisions_total{outcome=failed_open,rule=per-ip} 1
	// sluice_decisions_total{outcome=shadow_denied,rule=per-ip-strict} 1
	// sluice_store_call_duration_seconds{result=error} 1
	// sluice_store_call_duration_seconds{result=ok} 1
	// sluice_store_errors_total{ambiguous=true,kind=timeout} 1
}

func ExampleErrorKind() {
	err := fmt.Errorf("lease refill: %w", &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrClusterDown})
	fmt.Println(metrics.ErrorKind(err))
	fmt.Println(metrics.ErrorKind(context.DeadlineExceeded))
	// Output:
	// cluster_down
	// timeout
}
