package redisstore

import (
	"context"
	"slices"

	"github.com/sluicehq/sluice"
)

// TakePartial decides hits as Take does, except on Redis Cluster when the
// slots of some hits fail (CLUSTERDOWN, TRYAGAIN after its retries, a
// master that does not answer, its breaker open) and the other slots
// decided theirs: then it returns a [*sluice.PartialError] naming the
// failed hits, and the other hits' results are decisions (see
// [sluice.PartialTaker]). If a decided hit refused, the other decided
// slots' takes were given back, as for any refused request; if they all
// passed, their takes stand, and a caller that refuses the request anyway
// gives them back with [Store.Refund]. On a single node or Sentinel, where
// one script decides every hit, it is Take.
func (s *Store) TakePartial(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	return s.take(ctx, hits, out, true)
}

// partialFailure settles a request some of whose slot groups failed (errs,
// the first or first ambiguous failure being failure) while others were
// decided into out: it returns the *sluice.PartialError naming the failed
// hits, after giving back the decided groups' takes if a decided hit
// refused. It returns nil, deciding nothing, when every group failed.
func (cl *cluster) partialFailure(ctx context.Context, groups []*slotGroup, errs []error, failure error, hits []sluice.Hit, out []sluice.Result) error {
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
		cl.giveBack(ctx, decided, hits, out)
	}
	slices.Sort(failed)
	return &sluice.PartialError{Failed: failed, Err: failure}
}

var _ sluice.PartialTaker = (*Store)(nil)
