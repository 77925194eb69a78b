package lease_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/lease"
)

// Hot slots are compacted and replaced while other calls split: the
// sub-bucket a request uses comes from the sub-buckets kept with its key
// when it turned hot, and is always one of its own key's (run with
// -race).
func TestSplitConcurrentSlots(t *testing.T) {
	back, clock := backing(t)
	back.keys = map[string]int{}
	pol := &sluice.LeasePolicy{Rule: "split", HotKeys: sluice.HotKeyPolicy{Threshold: 5, Split: 4}}
	s := newStore(t, back, lease.Config{Clock: clock, Logger: quiet, SweepInterval: -1, TopK: 2})
	limit := sluice.PerSecond(400)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := make([]sluice.Result, 1)
			for i := range 2000 {
				key := fmt.Sprint("k", (g+i)%3)
				h := sluice.Hit{Key: key, Limit: limit, Algorithm: sluice.FixedWindow, Lease: pol}
				if err := s.Take(context.Background(), []sluice.Hit{h}, out); err != nil {
					t.Error(err)
					return
				}
				if i%50 == 0 {
					clock.Advance(300 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	back.mu.Lock()
	defer back.mu.Unlock()
	subs := 0
	for k := range back.keys {
		if len(k) > 0 && k[0] == 0 {
			subs++
		}
	}
	if subs == 0 {
		t.Fatal("no key was ever split")
	}
}
