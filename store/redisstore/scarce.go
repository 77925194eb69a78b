package redisstore

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
)

// Bursts across slots. The slots of a cross-slot request are each decided
// atomically, and what the others took for a request one slot refuses is
// given back (see undo.go); but until the refund lands those tokens look
// spent. When a burst empties two of a request's buckets at once (50
// logins of one account from one address, on a per-account and a per-IP
// rule), a request that takes the last token of one bucket while the
// other refuses it makes a concurrent request that needs that token be
// refused too: decided side by side, the slots admit fewer than a single
// node would.
//
// Decided in order, they admit what a single node admits: the slot of the
// scarcest bucket first, and the others only once it passed. A request
// that the scarcest bucket refuses takes nothing elsewhere, so it holds
// nothing any other request needs. Among the slots that could run out the
// order is fixed by the hits alone (the capacity of each slot's scarcest
// bucket in units of its cost, then the slot), like an order of locks: two
// requests that find the same buckets scarce take them in the same order,
// so neither holds what the other needs first. An order taken from what
// the store last reported (the fewest tokens left first) could differ
// between two requests in flight, and make them refuse each other.
//
// In order costs a second round trip for a request it admits, and saves
// one for a request the first slot refuses (side by side, that request
// waits for its refunds). So the store decides in order when the first
// slot is likely to refuse, or when two slots could: while the slot of a
// bucket of the request is low (for lowHold after a result there refused
// or left the bucket empty), or while two of its buckets could run out
// (the requests in flight on their slots could take half of them: those
// of this process, times the instances sharing the store, see
// Store.Instances). Otherwise the slots are decided side by side, in one
// round trip: with at most one bucket that could run out, tokens held in
// the others keep no one out. In order, the first slot's decision goes
// with the others' hits decided as a refused request (they consume
// nothing and report what is left for them), so a request the first slot
// refuses takes one round trip, and one it admits two; the first slot is
// the scarcest of those whose buckets could run out. With three slots or
// more, the slots after the first are decided side by side: two of them
// that run out together can still hold tokens for each other until the
// refunds land (under-admission only).

// lowHold is how long a slot counts as low after a result there refused
// or left a bucket empty.
const lowHold = time.Second

// An order says when a cross-slot request is decided in order.
type order uint8

const (
	orderWhenScarce order = iota // while a slot is low or two could run out: the default
	orderAlways                  // whenever two slots can refuse
	orderNever                   // side by side, always
)

// scarcity is what this process knows of how near each slot's buckets
// are to running out: the cross-slot requests in flight whose hits there
// can refuse them, and until when the slot counts as low.
type scarcity struct {
	inflight  [hashSlots]atomic.Int32
	lowUntil  [hashSlots]atomic.Int64 // by now; 0: never low
	now       func() int64            // nanoseconds, monotonic
	instances func() int              // the stores sharing this one's buckets; 0 when unknown
}

func newScarcity(instances func() int) *scarcity {
	epoch := time.Now()
	return &scarcity{now: func() int64 { return int64(time.Since(epoch)) }, instances: instances}
}

// enter counts a request of groups in flight and returns the index of the
// group to decide first, or -1 to decide them all side by side. The
// caller calls leave when the request is settled, refunds included.
func (sc *scarcity) enter(groups []*slotGroup, o order) int {
	enforcing := 0
	for _, g := range groups {
		if g.enforcing {
			sc.inflight[g.slot].Add(1)
			enforcing++
		}
	}
	if enforcing < 2 || o == orderNever {
		return -1 // one slot alone refuses: nothing held elsewhere matters
	}
	first, scarce, low := -1, 0, false
	var now, share int64
	for i, g := range groups {
		if !g.enforcing {
			continue
		}
		if o != orderAlways {
			if now == 0 {
				now, share = sc.now(), sc.share()
			}
			isLow := sc.lowUntil[g.slot].Load() > now
			if !isLow && sc.demand(g, share) <= g.burst {
				continue // cannot run out
			}
			low = low || isLow
		}
		scarce++
		if f := groups[max(first, 0)]; first < 0 || g.burst < f.burst || g.burst == f.burst && g.slot < f.slot {
			first = i
		}
	}
	if scarce < 2 && !low {
		return -1
	}
	return first
}

// share is how many times the requests in flight in this process the
// store counts on a slot: twice the instances sharing the buckets.
func (sc *scarcity) share() int64 {
	return 2 * int64(max(sc.instances(), 1))
}

// demand is how many units, in the hits' own, the requests in flight on
// g's slot could take, counted with share.
func (sc *scarcity) demand(g *slotGroup, share int64) int64 {
	return share * int64(sc.inflight[g.slot].Load())
}

// leave counts a request of groups, which entered, out of flight.
func (sc *scarcity) leave(groups []*slotGroup) {
	for _, g := range groups {
		if g.enforcing {
			sc.inflight[g.slot].Add(-1)
		}
	}
}

// observe marks low the slots of groups (decided unless errs says) where
// an enforcing hit was refused or left its bucket empty (without its cost).
func (sc *scarcity) observe(groups []*slotGroup, errs []error) {
	var now int64
	for i, g := range groups {
		if !g.enforcing || errs[i] != nil {
			continue
		}
		for j := range g.hits {
			h, r := &g.hits[j], &g.out[j]
			if enforcing(h) && (!r.Allowed || r.Remaining < minUnits(h)) {
				if now == 0 {
					now = sc.now()
				}
				sc.lowUntil[g.slot].Store(now + int64(lowHold))
				break
			}
		}
	}
}

// takeInOrder decides groups in order, groups[first] (the scarcest
// bucket's) on its own first, and returns each group's error. The others
// are decided beside it as a refused request, consuming nothing (see
// undoer.refusedRequest): if first refuses the request (or, unless
// partial, fails), their results are those; if it passed (or failed, with
// partial), they are decided after it, side by side.
func (cl *cluster) takeInOrder(ctx context.Context, groups []*slotGroup, first int, partial bool) []error {
	f := groups[first]
	step := make([]*slotGroup, 0, len(groups))
	step = append(step, f)
	for i, g := range groups {
		if i != first {
			step = append(step, &slotGroup{slot: g.slot, req: cl.undo.refusedRequest(g.hits)})
		}
	}
	stepErrs := cl.decideGroups(ctx, step)
	errs := make([]error, len(groups))
	errs[first] = stepErrs[0]
	if errs[first] == nil && !sluice.Admitted(f.hits, f.out) || errs[first] != nil && !partial {
		k := 1
		for i, g := range groups {
			if i == first {
				continue
			}
			if errs[i] = stepErrs[k]; errs[i] == nil {
				copy(g.out, step[k].req.out) // the refusing hit's result left out
			}
			k++
		}
		return errs
	}
	rest := step[:0]
	for i, g := range groups {
		if i != first {
			rest = append(rest, g)
		}
	}
	restErrs := cl.decideGroups(ctx, rest)
	k := 0
	for i := range groups {
		if i != first {
			errs[i] = restErrs[k]
			k++
		}
	}
	return errs
}
