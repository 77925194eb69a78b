package lease

import (
	"context"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/algo"
)

// settle takes from the backing store, in one forced hit, what the model
// of h's dry bucket owes (see [credit]), as p claimed it at now, and
// starts the model again from the answer. A failure leaves the tokens
// owed and is returned, so the rule's on_fail applies.
func (s *Store) settle(ctx context.Context, now int64, h *sluice.Hit, p *plan, sc *scratch) error {
	e := p.e
	sc.hits = append(sc.hits[:0], sluice.Hit{Key: h.Key, Limit: h.Limit, Algorithm: h.Algorithm, Group: h.Group, Cost: p.settle, Force: true})
	if cap(sc.outs) < 1 {
		sc.outs = make([]sluice.Result, 1)
	}
	sc.outs = sc.outs[:1]
	clear(sc.outs)
	err := s.backing.Take(ctx, sc.hits, sc.outs)
	e.mu.Lock()
	if err == nil {
		e.settled(now, p.settle, p.owed, sc.outs[0])
	}
	e.endRefill()
	e.mu.Unlock()
	clear(sc.hits)
	sc.hits = sc.hits[:0]
	if err != nil {
		return err
	}
	s.obs.LeaseRefilled(e.policy.Rule, p.settle)
	if p.det != nil {
		p.det.Observe(h.Key, p.settle, now)
	}
	return nil
}

// chargeModels counts forced hits, which the backing store charged, in
// the models of their dry buckets (see [credit]).
func (s *Store) chargeModels(now int64, hits []sluice.Hit) {
	for i := range hits {
		h := &hits[i]
		e := s.table.get(h.Key)
		if e == nil || e.limit != h.Limit || e.alg != h.Algorithm || e.interval == 0 {
			continue
		}
		e.mu.Lock()
		if e.credit.anchored > 0 {
			_, e.credit.tat = algo.TokenBucket(now, e.credit.tat, e.interval, e.limit.Capacity(), h.Units(), true)
		}
		e.mu.Unlock()
	}
}

type scratch struct {
	plans []plan
	hits  []sluice.Hit
	outs  []sluice.Result
}

// maxWaits is how often one call waits for another's refill of the same
// key before it passes through instead.
const maxWaits = 2

func (s *Store) getScratch(n int) *scratch {
	sc, _ := s.scratches.Get().(*scratch)
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
	s.scratches.Put(sc)
}
