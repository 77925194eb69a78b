package lease_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/redisstore"
)

// flood runs goroutines, spread evenly over stores (the instances), each
// checking hit flat out until stop is set, and returns what each instance
// admitted, how many checks were answered, how many failed, and how long
// that took. Each goroutine yields the processor after each check (it
// never waits): the instances here share one Go scheduler, which
// otherwise runs each of many busy goroutines in slices of 10 ms, so that
// an instance's checks can all be off the processor for tens of
// milliseconds, which separate processes on their own cores are not.
func flood(stores []sluice.Store, hit sluice.Hit, goroutines int, stop *atomic.Bool) (saturatedRun, time.Duration) {
	r := saturatedRun{admitted: make([]int64, len(stores))}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			i := g % len(stores)
			hits := []sluice.Hit{hit}
			out := make([]sluice.Result, 1)
			var admitted, answered, failed int64
			for !stop.Load() {
				if err := stores[i].Take(context.Background(), hits, out); err != nil {
					failed++
					continue
				}
				answered++
				if out[0].Allowed {
					admitted++
				}
				runtime.Gosched()
			}
			mu.Lock()
			r.admitted[i] += admitted
			r.checks += answered
			r.failed += failed
			mu.Unlock()
		}()
	}
	wg.Wait()
	return r, time.Since(start)
}

// spend empties hit's bucket through s, so that a flood admits only what
// refills.
func spend(t testing.TB, s sluice.Store, hit sluice.Hit) {
	t.Helper()
	hit.Cost, hit.Lease = hit.Limit.Capacity(), nil
	out := make([]sluice.Result, 1)
	if err := s.Take(context.Background(), []sluice.Hit{hit}, out); err != nil || !out[0].Allowed {
		t.Fatalf("spending the bucket: %v %+v", err, out[0])
	}
}

// userRedisStore returns a Redis store as a user sets it up: its own
// client from NewClient and the default Config (refusals remembered,
// checks coalesced), except that it does not count instances (the
// presence entries would add to the script count).
func userRedisStore(t testing.TB, addr string) *redisstore.Store {
	t.Helper()
	c, err := redisstore.NewClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := redisstore.New(c, redisstore.Config{Logger: quiet, Secret: []byte("test secret"), PresenceInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}
