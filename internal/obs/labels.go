package obs

import "github.com/sluicehq/sluice"

// OutcomeLabels are the labels of every known sluice.Outcome, indexed by
// outcome. They are read from Outcome.String, so outcomes added to the root
// package are labelled without a change here.
var OutcomeLabels = func() []string {
	var labels []string
	for o := 0; o < 256; o++ {
		s := sluice.Outcome(o).String()
		if s == "unknown" {
			break
		}
		labels = append(labels, s)
	}
	return labels
}()

// DefaultBuckets returns the default upper bounds, in seconds, of the
// store call latency histogram: 50 µs to 1 s in 1-2.5-5 steps, with the
// default latency budget (50 ms) as a bound, so calls that ran into the
// budget show in the buckets above it. Each call returns a new slice.
func DefaultBuckets() []float64 {
	return []float64{
		0.00005, 0.0001, 0.00025, 0.0005,
		0.001, 0.0025, 0.005,
		0.01, 0.025, 0.05,
		0.1, 0.25, 0.5, 1,
	}
}
