package metrics

import (
	"strings"

	"github.com/sluicehq/sluice"
)

// BreakerChanged sets sluice_breaker_state of endpoint to the value of to
// and counts the change in sluice_breaker_transitions_total. It implements
// [sluice.StoreEvents].
func (c *Collector) BreakerChanged(endpoint string, from, to sluice.BreakerState) {
	endpoint = strings.ToValidUTF8(endpoint, "\uFFFD")
	c.breaker.WithLabelValues(endpoint).Set(float64(to))
	c.transitions.WithLabelValues(endpoint, from.String(), to.String()).Inc()
}

// BreakerStarted makes endpoint's sluice_breaker_state series, at 0
// (closed), when it has none yet: a breaker is shown from its start, not
// from its first transition. It implements [sluice.BreakerStartedEvents].
func (c *Collector) BreakerStarted(endpoint string) {
	c.breaker.WithLabelValues(strings.ToValidUTF8(endpoint, "\uFFFD"))
}
