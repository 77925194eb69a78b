package lease

import (
	"context"
	"fmt"

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

// settleBatch is the settles a sweep makes, in one forced call.
type settleBatch struct {
	entries []*entry
	hits    []sluice.Hit
	owed    []int64 // what each entry owed when claimed
}

// claim adds to b the settle of what e's model owes at now, when the
// model has expired (or, when all, whatever its state: the store is
// closing) and no refill or settle is in flight. A model whose tokens
// have all refilled owes nothing more; an expired one that owes nothing
// ends.
func (b *settleBatch) claim(e *entry, now int64, all bool) {
	if e.interval == 0 {
		return
	}
	if all {
		e.mu.Lock()
	} else if !e.mu.TryLock() {
		return
	}
	defer e.mu.Unlock()
	cr := &e.credit
	if cr.anchored == 0 || e.refilling != nil || !all && e.modelLive(now) {
		return
	}
	x := e.settleAmount(now)
	if x == 0 {
		e.endModel()
		return
	}
	e.refilling = make(chan struct{})
	b.entries = append(b.entries, e)
	b.hits = append(b.hits, sluice.Hit{Key: e.key, Limit: e.limit, Algorithm: e.alg, Group: e.group, Cost: x, Force: true})
	b.owed = append(b.owed, cr.owed)
}

// settleAll makes the settles of b in one forced call to the backing
// store. A failure leaves the tokens owed (the next sweep tries again),
// and is logged and returned.
func (s *Store) settleAll(ctx context.Context, now int64, b *settleBatch) error {
	if len(b.entries) == 0 {
		return nil
	}
	out := make([]sluice.Result, len(b.hits))
	err := s.backing.Take(ctx, b.hits, out)
	for i, e := range b.entries {
		e.mu.Lock()
		if err == nil {
			e.settled(now, b.hits[i].Cost, b.owed[i], out[i])
			if !e.modelLive(now) && e.credit.owed == 0 {
				e.endModel()
			}
		}
		e.endRefill()
		e.mu.Unlock()
		if err == nil {
			s.obs.LeaseRefilled(e.policy.Rule, b.hits[i].Cost)
		}
	}
	if err != nil {
		s.cfg.Logger.Warn("sluice: lease tokens admitted in process not settled", "keys", len(b.entries), "err", err)
		return fmt.Errorf("lease: settle: %w", err)
	}
	return nil
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
