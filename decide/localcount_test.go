package decide

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
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

// TestHeldCountConcurrent: counts reported at once lose no peak: after
// many goroutines report theirs together, the count holds the largest,
// and each of them was given at least its own; so too when the hold of
// the peak before them is over, and some report less than it.
func TestHeldCountConcurrent(t *testing.T) {
	const goroutines, rounds = 16, 300
	t0 := time.Now().UnixNano()
	for round := range rounds {
		var c heldCount
		c.get(goroutines/2, t0)
		now := t0 + int64(time.Second)
		if round%2 == 1 {
			now += int64(countHold) // the earlier peak's hold is over
		}
		ready := make(chan struct{})
		var wg sync.WaitGroup
		var short atomic.Int64
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := int64(g + 1)
				<-ready
				if got := c.get(n, now); got < n {
					short.Add(1)
				}
			}()
		}
		close(ready)
		wg.Wait()
		if n := short.Load(); n > 0 {
			t.Fatalf("round %d: %d callers given less than the count they reported", round, n)
		}
		if got := c.get(1, now); got != goroutines {
			t.Fatalf("round %d: the count holds %d after counts 1 to %d were reported at once, want %d", round, got, goroutines, goroutines)
		}
	}
}

// counter is a store that counts instances as n says, and how often it
// was asked.
type counter struct {
	sluice.Store
	n, asked atomic.Int64
}

func (c *counter) Instances() int { c.asked.Add(1); return int(c.n.Load()) }

// TestSampledCount: the count the local fallback divides by is the largest
// sampled while the store answered in the minute before it failed, not
// what the store counts when it fails; samples are read at most once per
// sampleEvery.
func TestSampledCount(t *testing.T) {
	t0 := time.Now().UnixNano()
	at := func(d time.Duration) int64 { return t0 + int64(d) }
	for _, tt := range []struct {
		name   string
		fallAt time.Duration // the count falls from 4 to 3
		failAt time.Duration // the store fails: the fallback decides
		want   int64
	}{
		{"counted out 10 s before a failure", 50 * time.Second, 60 * time.Second, 4},
		{"counted out just before a failure", 59*time.Second + 500*time.Millisecond, 60 * time.Second, 4},
		{"counted out over a minute before a failure", 50 * time.Second, 50*time.Second + countHold + sampleEvery, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := &counter{}
			store.n.Store(4)
			f := newLocalFallback(0, store, nil)
			// Successful calls every 100 ms until the failure.
			for d := time.Duration(0); d < tt.failAt; d += 100 * time.Millisecond {
				if d == tt.fallAt {
					store.n.Store(3)
				}
				f.sample(at(d))
			}
			if most := int64(tt.failAt/sampleEvery) + 1; store.asked.Load() > most {
				t.Errorf("count read %d times in %v, want at most %d", store.asked.Load(), tt.failAt, most)
			}
			if got := f.instances(at(tt.failAt)); got != tt.want {
				t.Fatalf("the fallback divides by %d, want %d", got, tt.want)
			}
		})
	}
}
