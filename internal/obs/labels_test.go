package obs_test

import (
	"slices"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/obs"
)

func TestOutcomeLabels(t *testing.T) {
	if len(obs.OutcomeLabels) == 0 {
		t.Fatal("no outcome labels")
	}
	for i, l := range obs.OutcomeLabels {
		if want := sluice.Outcome(i).String(); l != want {
			t.Errorf("label %d = %q, want %q", i, l, want)
		}
	}
	if s := sluice.Outcome(len(obs.OutcomeLabels)).String(); s != "unknown" {
		t.Errorf("outcome %d is %q, not labelled", len(obs.OutcomeLabels), s)
	}
}

func TestDefaultBuckets(t *testing.T) {
	b := obs.DefaultBuckets()
	for i := 1; i < len(b); i++ {
		if b[i] <= b[i-1] {
			t.Fatalf("buckets not strictly increasing at %d: %v", i, b)
		}
	}
	if b[0] != 0.00005 || b[len(b)-1] != 1 || !slices.Contains(b, 0.05) {
		t.Errorf("buckets %v: want 50 µs to 1 s with the 50 ms budget as a bound", b)
	}
	b[0] = 42
	if obs.DefaultBuckets()[0] == 42 {
		t.Error("DefaultBuckets shares its slice between calls")
	}
}
