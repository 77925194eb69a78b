package lease

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice"
)

type scratch struct {
	plans []plan
	hits  []sluice.Hit
	outs  []sluice.Result
}

// maxWaits is how often one call waits for another's refill of the same
// key before it passes through instead.
const maxWaits = 2

func (s *Store) getScratch(n int) *scratch {
	sc, _ := s.scratch.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	if cap(sc.plans) < n {
		sc.plans = make([]plan, n)
	}
	sc.plans = sc.plans[:n]
	sc.hits, sc.outs = sc.hits[:0], sc.outs[:0]
	return sc
}

func (s *Store) putScratch(sc *scratch) {
	clear(sc.plans)
	clear(sc.hits)
	s.scratch.Put(sc)
}

func (s *Store) takeSlow(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	sc := s.getScratch(len(hits))
	defer s.putScratch(sc)
	for wait := 0; ; wait++ {
		now := s.now()
		busy := s.plan(now, hits, sc.plans, wait < maxWaits)
		if busy == nil {
			return s.decide(ctx, now, hits, out, sc)
		}
		s.undo(sc.plans)
		select {
		case <-busy:
		case <-ctx.Done():
			return waitError(ctx)
		}
	}
}

// waitError is the error of a call whose context ended while it waited
// for another call's refill: nothing was sent, so it is not ambiguous. A
// deadline is a timeout; a cancellation is reported as the store being
// unavailable to the caller (as redisstore does), wrapping its cause.
func waitError(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err {
		err = fmt.Errorf("%w: %w", err, cause)
	}
	kind := sluice.ErrUnavailable
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		kind = sluice.ErrTimeout
	}
	return &sluice.StoreError{Op: "lease: take", Kind: kind, Err: err}
}

// decide makes the backing call the plans need, if any, and writes the
// results.
func (s *Store) decide(ctx context.Context, now int64, hits []sluice.Hit, out []sluice.Result, sc *scratch) error {
	admitted, err := s.callBacking(ctx, hits, sc)
	if err != nil {
		return err
	}
	s.settleBacked(now, hits, out, sc, admitted)
	s.settleLocal(now, out, sc.plans, admitted)
	return nil
}

// callBacking sends the hits that need the backing store to it in one
// call, if any, and reports whether the request is admitted: by the
// backing store, or, when nothing needs it, by every hit decided in
// process. A remembered denial only stands in for the backing store when
// nothing else needs it: otherwise it is sent like any other hit. A
// backing-store error undoes the plans.
func (s *Store) callBacking(ctx context.Context, hits []sluice.Hit, sc *scratch) (admitted bool, err error) {
	admitted, need := true, false
	for i := range sc.plans {
		switch sc.plans[i].kind {
		case kDeny:
			admitted = false
		case kPass, kRefill, kPeek:
			need = true
		}
	}
	if !need {
		return admitted, nil
	}
	for i := range sc.plans {
		p := &sc.plans[i]
		h := hits[i]
		switch p.kind {
		case kLocal:
			continue
		case kRefill:
			h.Cost, h.MinCost = p.upTo, p.need
		case kDeny:
			p.kind = kPass
			fallthrough
		case kPass:
			if p.split {
				h = p.sub
			}
		}
		p.j = len(sc.hits)
		sc.hits = append(sc.hits, h)
	}
	if cap(sc.outs) < len(sc.hits) {
		sc.outs = make([]sluice.Result, len(sc.hits))
	}
	sc.outs = sc.outs[:len(sc.hits)]
	clear(sc.outs)
	if err := s.backing.Take(ctx, sc.hits, sc.outs); err != nil {
		s.undo(sc.plans)
		return false, err
	}
	return sluice.Admitted(sc.hits, sc.outs), nil
}
