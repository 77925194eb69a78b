package obs

import "github.com/sluicehq/sluice"

// Sink is what a metrics sink of the library's (the Prometheus collector,
// the OpenTelemetry recorder) implements, so that both hear the same
// decisions, store calls and store events.
type Sink interface {
	sluice.Observer
	sluice.StoreCallObserver
	sluice.RequestLimitObserver
	sluice.StoreEvents
	sluice.BreakerStartedEvents
	sluice.StateHealedEvents
	sluice.EvictionPolicyEvents
}
