package memstore

import (
	"sync"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/algo"
)

// Penalties (see [sluice.Hit.Block]). A bucket whose hits carry a penalty
// has an entry here while it is blocked or counts refusals toward a block.
// Calls with such hits are decided under the table's one lock, so that a
// hit's refusal and the block it starts are one step; calls without them
// never take it.

// penKey identifies the bucket an entry belongs to, as bucketKey does.
type penKey struct {
	key    string
	alg    sluice.Algorithm
	period int64
}

func makePenKey(h *sluice.Hit) penKey {
	k := makeKey(h)
	return penKey{key: h.Key, alg: k.alg, period: k.period}
}

// penalty is one bucket's entry: blocked until until; count refusals in
// the period that began at since; forgettable from expires on (µs).
type penalty struct {
	until, count, since, expires int64
}

// penalties is the table of entries, bounded by what the sweeper forgets:
// an entry outlives neither its block nor its counting period.
type penalties struct {
	mu sync.Mutex
	m  map[penKey]penalty
}

// penalized reports whether a hit of hits carries a penalty that applies
// (forced hits neither count nor are blocked).
func penalized(hits []sluice.Hit) bool {
	for i := range hits {
		if hits[i].Block > 0 && !hits[i].Force {
			return true
		}
	}
	return false
}

// takePenalized decides hits, some of which carry a penalty: a blocked hit
// refuses its request, which then consumes nothing (every hit is reported
// as a peek would find its bucket); otherwise hits are decided as usual,
// and each penalty hit refused on its own counts toward its block.
func (s *Store) takePenalized(now int64, hits []sluice.Hit, out []sluice.Result) {
	s.pen.mu.Lock()
	defer s.pen.mu.Unlock()
	if s.pen.m == nil {
		s.pen.m = make(map[penKey]penalty)
	}
	blocked := false
	for i := range hits {
		h := &hits[i]
		if h.Block > 0 && !h.Peek && s.pen.m[makePenKey(h)].until > now {
			blocked = true
		}
	}
	if blocked {
		peeks := make([]sluice.Hit, len(hits))
		for i, h := range hits {
			h.Peek, h.MinCost = true, 0
			peeks[i] = h
		}
		s.takeMany(now, peeks, out)
	} else {
		s.takeMany(now, hits, out)
		s.countRefusals(now, hits, out)
	}
	// Every penalty hit on a blocked bucket (peeks too) reports the block.
	for i := range hits {
		if h := &hits[i]; h.Block > 0 && !h.Force {
			if p := s.pen.m[makePenKey(h)]; p.until > now {
				setBlocked(&out[i], p.until-now)
			}
		}
	}
}

// countRefusals counts the refusal of every penalty hit of hits that did
// not pass on its own, starting its block at the After-th within its
// limit's period. The caller holds s.pen.mu.
func (s *Store) countRefusals(now int64, hits []sluice.Hit, out []sluice.Result) {
	for i := range hits {
		h := &hits[i]
		if h.Block <= 0 || h.Peek || h.Force || out[i].Allowed {
			continue
		}
		k := makePenKey(h)
		p := s.pen.m[k]
		if period := h.Limit.PeriodMicros(); p.count == 0 || now-p.since >= period {
			p.since, p.count = now, 0
			p.expires = max(p.until, now+period)
		}
		if _, held := s.pen.m[k]; !held {
			s.roomForPenalty(now)
		}
		p.count++
		if p.count >= h.Refusals() {
			p.until, p.count = now+h.Block.Microseconds(), 0
			p.expires = max(p.expires, p.until)
			out[i].BlockStarted = true
		}
		s.pen.m[k] = p
	}
}

// roomForPenalty makes room for one more entry when the table holds as
// many as the store holds buckets (Config.MaxBuckets): it forgets the
// entries that neither block nor count any more, then, if none did, the
// one that ends first among a few (a block forgiven early). The caller
// holds s.pen.mu.
func (s *Store) roomForPenalty(now int64) {
	limit := int(s.table.c.max)
	if limit <= 0 || len(s.pen.m) < limit {
		return
	}
	for k, p := range s.pen.m {
		if p.expires <= now {
			delete(s.pen.m, k)
		}
	}
	if len(s.pen.m) < limit {
		return
	}
	var victim penKey
	first, seen := int64(0), 0
	for k, p := range s.pen.m { // map order: a random few
		if seen == 0 || p.expires < first {
			victim, first = k, p.expires
		}
		if seen++; seen == 8 {
			break
		}
	}
	delete(s.pen.m, victim)
}

// setBlocked makes r a blocked refusal with left µs of its block to run.
func setBlocked(r *sluice.Result, left int64) {
	r.Allowed, r.Unsatisfiable, r.Blocked = false, false, true
	r.Remaining, r.Receipt = 0, sluice.Receipt{}
	r.RetryAfter = algo.Micros(left)
	r.ResetAfter = max(r.ResetAfter, r.RetryAfter)
}

// resetPenalty lifts h's block and forgets its refusals.
func (s *Store) resetPenalty(h *sluice.Hit) {
	s.pen.mu.Lock()
	delete(s.pen.m, makePenKey(h))
	s.pen.mu.Unlock()
}

// sweepPenalties forgets the entries that neither block nor count any
// more, and returns how many.
func (s *Store) sweepPenalties(now int64) int {
	s.pen.mu.Lock()
	defer s.pen.mu.Unlock()
	n := 0
	for k, p := range s.pen.m {
		if p.expires <= now {
			delete(s.pen.m, k)
			n++
		}
	}
	return n
}
