package lease_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/lease"
)

// Many goroutines send requests of two or three leased hits over three
// keys, in every order (so calls wait for each other's refills in every
// pattern): nothing deadlocks, a request is admitted only when all its
// hits are, and every token is accounted for: after Close each bucket in
// the backing store holds exactly its capacity minus what was admitted
// on it.
func TestStressConservesTokens(t *testing.T) {
	back, clock := backing(t)
	s, err := lease.New(back, lease.Config{Clock: clock, DriftBudget: 1, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	const capacity = 300
	limit := sluice.PerHour(1).WithBurst(capacity) // no refill: the clock stands still
	keys := []string{"x", "y", "z"}
	var mu sync.Mutex
	admitted := map[string]int64{}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range 150 {
				perm := rng.Perm(len(keys))[:2+rng.IntN(2)]
				hits := make([]sluice.Hit, len(perm))
				for i, k := range perm {
					hits[i] = sluice.Hit{Key: keys[k], Limit: limit, Cost: 1 + rng.Int64N(2), Lease: leased}
				}
				out := make([]sluice.Result, len(hits))
				if err := s.Take(context.Background(), hits, out); err != nil {
					t.Error(err)
					return
				}
				if !sluice.Admitted(hits, out) {
					continue
				}
				mu.Lock()
				for i := range hits {
					admitted[hits[i].Key] += hits[i].Cost
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		got := peek(t, back, sluice.Hit{Key: k, Limit: limit})
		t.Logf("%s: admitted %d, the bucket holds %d of %d", k, admitted[k], got, capacity)
		if admitted[k] > capacity || got != capacity-admitted[k] {
			t.Errorf("%s: admitted %d and the bucket holds %d: want the two to make %d", k, admitted[k], got, capacity)
		}
	}
}
