package redisstore

import (
	"context"
	"log/slog"
	"slices"
	"sync/atomic"

	"github.com/sluicehq/sluice"
)

// The cross-slot undo. A request whose hits lie in several slots is
// decided by one script call per slot (see cluster.go), each atomic on its
// own. When one slot refuses the request, what the others took is given
// back by exact refunds before Take returns, and their hits decided again,
// behind the refunds in one more round trip, as a request that cannot be
// admitted, so the caller sees what a single node would have answered
// (see undoer.giveBack). When some slots fail (CLUSTERDOWN, TRYAGAIN after
// its retries, a dead master, its breaker open) and the others are
// decided, Take gives back what the decided slots took and fails as a
// whole; TakePartial instead keeps the decided slots' decisions and names
// the failed hits in a *sluice.PartialError (see undoer.partialFailure).
// A refund is never retried (a retry can give back twice): a failed one is
// counted and logged, and loses at most what it was for.

// undoer gives back what the slots of a cross-slot request took, and
// applies the refunds of Store.Refund, through the cluster's scripts. It
// counts and logs the refunds that fail.
type undoer struct {
	scripts  *decider
	log      *slog.Logger
	failures atomic.Int64 // refunds that failed
}

// abandon gives back what the groups decided (errs[i] nil) took, for a
// request that failed as a whole.
func (u *undoer) abandon(ctx context.Context, groups []*slotGroup, errs []error) {
	var refunds []sluice.Refund
	for i, g := range groups {
		if errs[i] != nil {
			continue
		}
		for j := range g.hits {
			if rc := g.out[j].Receipt; rc.Taken > 0 && !g.hits[j].Force {
				refunds = append(refunds, sluice.Refund{Hit: g.hits[j], Receipt: rc})
			}
		}
	}
	u.refundQuietly(ctx, refunds)
}

// giveBack undoes a refused request's takes in the slots that admitted
// their part: per such slot, one refund script call and, behind it in the
// same pipeline, the slot's hits decided again in a request that cannot be
// admitted (an extra hit in the slot whose cost exceeds its capacity), so
// that they consume nothing and report what a single node reports for a
// refused request: a hit that passed tells what is left without its
// consumption, a later hit on the same bucket sees the earlier ones'. A
// refund is never retried; a failed one is counted and logged, and its
// hits keep their takes' results without the receipts.
func (u *undoer) giveBack(ctx context.Context, groups []*slotGroup, hits []sluice.Hit, out []sluice.Result) {
	undos, cmds := u.undos(groups)
	if len(cmds) == 0 {
		return
	}
	replies, errs := u.sendUndos(ctx, cmds)
	for i, d := range undos {
		u.settleUndo(ctx, d, replies[2*i:2*i+2], errs[2*i:2*i+2], hits, out)
	}
}

// undo is one slot's part of giveBack.
type undo struct {
	g       *slotGroup
	refunds []sluice.Refund
	again   request // the slot's hits and the refusing hit
}

// undos returns the undos of the groups that took something, and their
// commands: per undo its refund, then its hits decided again.
func (u *undoer) undos(groups []*slotGroup) ([]*undo, [][]any) {
	var undos []*undo
	var cmds [][]any
	for _, g := range groups {
		d := &undo{g: g}
		for j := len(g.hits) - 1; j >= 0; j-- { // the last take first
			if rc := g.out[j].Receipt; rc.Taken > 0 && !g.hits[j].Force {
				d.refunds = append(d.refunds, sluice.Refund{Hit: g.hits[j], Receipt: rc})
			}
		}
		if len(d.refunds) == 0 {
			continue
		}
		d.again = u.refusedRequest(g.hits)
		undos = append(undos, d)
		cmds = append(cmds, u.scripts.refundCommand(d.refunds), takeCommand([]*request{&d.again}))
	}
	return undos, cmds
}

// sendUndos sends the undos' commands in one pipeline. A decision whose
// refund was re-sent after NOSCRIPT ran before it: it is sent again.
func (u *undoer) sendUndos(ctx context.Context, cmds [][]any) ([]any, []error) {
	replies, errs, resent := u.scripts.send.many(ctx, "redisstore: refund", cmds)
	var stale []int // decisions that ran before their refund was re-sent
	for i := 0; i < len(cmds); i += 2 {
		if resent[i] && errs[i] == nil {
			stale = append(stale, i+1)
		}
	}
	if len(stale) > 0 {
		again := make([][]any, len(stale))
		for j, i := range stale {
			again[j] = cmds[i]
		}
		r, e, _ := u.scripts.send.many(ctx, "redisstore: refund", again)
		for j, i := range stale {
			replies[i], errs[i] = r[j], e[j]
		}
	}
	return replies, errs
}

// settleUndo writes into out what d's slot reports once its takes were
// given back, from the replies and errors of its refund and decision.
func (u *undoer) settleUndo(ctx context.Context, d *undo, replies []any, errs []error, hits []sluice.Hit, out []sluice.Result) {
	rerr, derr := errs[0], errs[1]
	if rerr == nil {
		rerr = decodeRefund(replies[0], len(d.refunds))
	}
	for _, at := range d.g.idx {
		out[at].Receipt = sluice.Receipt{}
	}
	if rerr != nil {
		u.refundFailed(ctx, rerr, d.refunds)
		return
	}
	if derr == nil {
		derr = u.scripts.finish(replies[1], []*request{&d.again})
	}
	if derr != nil {
		return // the takes' results stand, without receipts
	}
	for j, at := range d.g.idx {
		r := d.again.out[j]
		r.Limit, r.Receipt = hits[at].Limit, sluice.Receipt{}
		out[at] = r
	}
}

// refusedRequest returns the request deciding hits, which lie in one
// slot, as a request that cannot be admitted: with one more hit, in their
// slot, whose cost exceeds its capacity. It consumes nothing, and its
// results are what a single node reports for a refused request: a hit
// that passes tells what is left without consuming, a later hit on the
// same bucket sees the earlier ones'. The last result is the extra hit's.
func (u *undoer) refusedRequest(hits []sluice.Hit) request {
	again := append(slices.Clone(hits), refuser)
	r := u.scripts.newRequest(again, make([]sluice.Result, len(again)))
	// The refusing hit's key shares the slot's hash tag; it is never
	// written, as its request is never admitted.
	r.setKey(len(again)-1, r.keys[0]+":refuse")
	return r
}

// refuser is a hit that can never pass: it makes a request that carries it
// consume nothing.
var refuser = sluice.Hit{Key: "refuse", Limit: sluice.PerHour(1), Cost: 2}

// refund applies refunds that may lie in several slots: one refund script
// call per slot, in one pipeline. It returns the first failure, the first
// ambiguous one if any.
func (u *undoer) refund(ctx context.Context, refunds []sluice.Refund) error {
	_, errs := u.refundSlots(ctx, refunds)
	var failure error
	for _, err := range errs {
		failure = worse(failure, err)
	}
	return failure
}

// refundQuietly gives back refunds and counts and logs what fails.
func (u *undoer) refundQuietly(ctx context.Context, refunds []sluice.Refund) {
	if len(refunds) == 0 {
		return
	}
	groups, errs := u.refundSlots(ctx, refunds)
	for i, err := range errs {
		if err != nil {
			u.refundFailed(ctx, err, groups[i])
		}
	}
}

// refundSlots gives back refunds, grouped by the slot of their buckets:
// one refund script call per slot, in one pipeline. It returns the groups
// and each one's error.
func (u *undoer) refundSlots(ctx context.Context, refunds []sluice.Refund) ([][]sluice.Refund, []error) {
	groups := u.groupRefunds(refunds)
	cmds := make([][]any, len(groups))
	for i, g := range groups {
		cmds[i] = u.scripts.refundCommand(g)
	}
	replies, errs, _ := u.scripts.send.many(ctx, "redisstore: refund", cmds)
	for i, g := range groups {
		if errs[i] == nil {
			errs[i] = decodeRefund(replies[i], len(g))
		}
	}
	return groups, errs
}

// refundFailed counts and logs a refund that failed. It is not retried:
// a retry can give back twice. It loses at most what it was for.
func (u *undoer) refundFailed(ctx context.Context, err error, refunds []sluice.Refund) {
	var units int64
	for _, r := range refunds {
		units += r.Amount()
	}
	u.failures.Add(1)
	u.log.LogAttrs(ctx, slog.LevelWarn, "redisstore: a refund of a refused cross-slot request failed; its units stay consumed until their buckets refill",
		slog.Int("buckets", len(refunds)), slog.Int64("units", units), slog.String("error", err.Error()))
}

// groupRefunds splits refunds by the slot of their buckets.
func (u *undoer) groupRefunds(refunds []sluice.Refund) [][]sluice.Refund {
	return groupBySlot(u, refunds, func(r *sluice.Refund) *sluice.Hit { return &r.Hit })
}

// groupBySlot splits items by the cluster slot of the buckets of their
// hits, in order.
func groupBySlot[T any](u *undoer, items []T, hit func(*T) *sluice.Hit) [][]T {
	var groups [][]T
	at := make(map[int]int, 4)
	for j := range items {
		slot := slotOf(u.scripts.keys.key(hit(&items[j])))
		i, ok := at[slot]
		if !ok {
			i = len(groups)
			at[slot] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], items[j])
	}
	return groups
}

// partialFailure settles a request some of whose slot groups failed (errs,
// the first or first ambiguous failure being failure) while others were
// decided into out: it returns the *sluice.PartialError naming the failed
// hits, after giving back the decided groups' takes if a decided hit
// refused. It returns nil, deciding nothing, when every group failed.
func (u *undoer) partialFailure(ctx context.Context, groups []*slotGroup, errs []error, failure error, hits []sluice.Hit, out []sluice.Result) error {
	var decided []*slotGroup
	var failed []int
	admitted := true
	for i, g := range groups {
		if errs[i] != nil {
			for _, at := range g.idx {
				failed = append(failed, at)
				out[at] = sluice.Result{}
			}
			continue
		}
		decided = append(decided, g)
		admitted = admitted && sluice.Admitted(g.hits, g.out)
	}
	if len(decided) == 0 {
		return nil
	}
	if !admitted {
		u.giveBack(ctx, decided, hits, out)
	}
	slices.Sort(failed)
	return &sluice.PartialError{Failed: failed, Err: failure}
}
