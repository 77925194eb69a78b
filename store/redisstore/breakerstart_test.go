package redisstore

import (
	"sync"
	"testing"
)

// startLog is a StoreEvents that counts the breakers reported started, by
// endpoint.
type startLog struct {
	eventLog
	mu      sync.Mutex
	started map[string]int
}

func (s *startLog) BreakerStarted(endpoint string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started[endpoint]++
}

// Each endpoint's breaker is reported started once, however many calls
// reach it first at once, and before any transition.
func TestBreakerStartedOnce(t *testing.T) {
	events := &startLog{started: map[string]int{}}
	bs := newBreakers(BreakerConfig{}, events)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for _, addr := range []string{"10.0.0.1:6379", "10.0.0.2:6379"} {
				if bs.get(addr) == nil {
					t.Error("no breaker")
				}
			}
		})
	}
	wg.Wait()
	for _, addr := range []string{"10.0.0.1:6379", "10.0.0.2:6379"} {
		if n := events.started[addr]; n != 1 {
			t.Errorf("%s reported started %d times, want 1", addr, n)
		}
	}
	if len(events.events) != 0 {
		t.Errorf("transitions %q, want none", events.events)
	}
	if b := newBreaker("x", BreakerConfig{Disabled: true}, events); b != nil || events.started["x"] != 0 {
		t.Error("a disabled breaker was made, or reported started")
	}
}
