package decide

import (
	"testing"
	"time"
)

// TestHeldCount: a count that rises is taken at once; one that falls only
// once the larger one has not been reported for countHold; at least 1.
func TestHeldCount(t *testing.T) {
	var c heldCount
	t0 := time.Now().UnixNano()
	at := func(d time.Duration) int64 { return t0 + int64(d) }
	for _, step := range []struct {
		name string
		n    int64
		at   int64
		want int64
	}{
		{"first", 2, at(0), 2},
		{"rises at once", 4, at(time.Second), 4},
		{"falls: held", 1, at(2 * time.Second), 4},
		{"the peak again: held longer", 4, at(50 * time.Second), 4},
		{"falls, within the hold of the last report", 3, at(50*time.Second + countHold - time.Nanosecond), 4},
		{"falls, the hold over", 3, at(50*time.Second + countHold), 3},
		{"none counted: held", 0, at(50*time.Second + countHold + 30*time.Second), 3},
		{"none counted, the hold over: 1", 0, at(50*time.Second + 2*countHold), 1},
	} {
		if got := c.get(step.n, step.at); got != step.want {
			t.Fatalf("%s: count %d gives %d, want %d", step.name, step.n, got, step.want)
		}
	}
}
