package sluicegrpc_test

import (
	"context"
	"sync"

	"github.com/sluicehq/sluice"
)

// partialStore fails its calls' first hit and decides the others as
// allowed, each taking its cost.
type partialStore struct {
	mu      sync.Mutex
	refunds []sluice.Refund
}

func (s *partialStore) Take(context.Context, []sluice.Hit, []sluice.Result) error {
	return unavailable(0)
}

func (s *partialStore) TakePartial(_ context.Context, hits []sluice.Hit, out []sluice.Result) error {
	for i := 1; i < len(hits); i++ {
		out[i] = sluice.Result{Allowed: true, Limit: hits[i].Limit, Remaining: 4,
			Receipt: sluice.Receipt{Taken: hits[i].Units(), Mark: 1}}
	}
	return &sluice.PartialError{Failed: []int{0}, Err: unavailable(0)}
}

func (s *partialStore) Refund(_ context.Context, refunds []sluice.Refund) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refunds = append(s.refunds, refunds...)
	return nil
}
