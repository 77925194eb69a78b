package sluiceotel_test

import (
	"slices"
	"testing"

	"github.com/sluicehq/sluice"
	sluiceotel "github.com/sluicehq/sluice/otel"
)

var _ sluice.BreakerStartedEvents = (*sluiceotel.Recorder)(nil)

// A breaker reported started is closed in sluice.breaker.state before any
// transition, with none counted; a start reported again (by a second
// store on the endpoint) leaves the state as it is.
func TestBreakerStarted(t *testing.T) {
	rec, reader := newRecorder(t)
	const a = "sluice.store.endpoint=10.0.0.1:6379"
	rec.BreakerStarted("10.0.0.1:6379")
	got := collect(t, reader)
	want := []string{"sluice.breaker.state=closed," + a + ": 1", "sluice.breaker.state=half_open," + a + ": 0", "sluice.breaker.state=open," + a + ": 0"}
	if p := got["sluice.breaker.state"].points; !slices.Equal(p, want) {
		t.Errorf("state %q, want %q", p, want)
	}
	if p := got["sluice.breaker.transitions"].points; len(p) != 0 {
		t.Errorf("transitions %q before any", p)
	}
	rec.BreakerChanged("10.0.0.1:6379", sluice.BreakerClosed, sluice.BreakerOpen)
	rec.BreakerStarted("10.0.0.1:6379")
	want = []string{"sluice.breaker.state=closed," + a + ": 0", "sluice.breaker.state=half_open," + a + ": 0", "sluice.breaker.state=open," + a + ": 1"}
	if p := collect(t, reader)["sluice.breaker.state"].points; !slices.Equal(p, want) {
		t.Errorf("after a transition and a second start: %q, want %q", p, want)
	}
}
