package metrics_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
)

var _ sluice.BreakerStartedEvents = (*metrics.Collector)(nil)

// A breaker reported started has its state series at 0 (closed) before
// any transition, with no transition counted; a start reported again (by
// a second store on the endpoint) leaves the state as it is.
func TestBreakerStarted(t *testing.T) {
	c, reg := newCollector(t, metrics.Config{})
	const a = "10.0.0.1:6379"
	gauge := fmt.Sprintf("sluice_breaker_state{endpoint=%q}", a)
	c.BreakerStarted(a)
	got := series(t, reg)
	want(t, got, map[string]float64{gauge: 0})
	for k := range got {
		if strings.HasPrefix(k, "sluice_breaker_transitions_total{") {
			t.Errorf("transition series %s before any transition", k)
		}
	}
	c.BreakerChanged(a, sluice.BreakerClosed, sluice.BreakerOpen)
	c.BreakerStarted(a)
	want(t, series(t, reg), map[string]float64{gauge: 1})
}
