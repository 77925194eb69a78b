package sluice

import (
	"context"
	"fmt"
	"strings"
)

// PartialError is the error of a [PartialTaker]'s TakePartial when some
// hits could not be decided and the others were. Failed lists the
// undecided hits by their index in the call; every other hit's Result is a
// valid decision. Err is the failure of the undecided hits, a
// [*StoreError]: errors.Is, errors.As and [IsAmbiguous] see through to it,
// and when it is ambiguous the failed hits may have been consumed.
type PartialError struct {
	Failed []int // the undecided hits' indexes, ascending
	Err    error // why they failed, a *StoreError
}

// Error describes the failure, for logs. Never show it to clients.
func (e *PartialError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of the hits undecided", len(e.Failed))
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns Err.
func (e *PartialError) Unwrap() error { return e.Err }

// PartialTaker is an optional interface of a [Store] whose hits can fail
// apart, such as the Redis store on Redis Cluster, where each hash slot is
// decided on its own and one slot's shard can be down while the others
// answer.
//
// TakePartial decides hits as [Store.Take] does, except when some hits
// fail and the others were decided: then it returns a [*PartialError]
// naming the failed hits, and the results of the other hits are valid
// decisions. All or nothing still holds among the decided hits: if one of
// them refused, none of them consumed. If they all passed, their takes
// stand, and it is the caller's to give them back ([Refunder.Refund], with
// their receipts) when it refuses the request anyway, say because a
// failed hit's policy refuses on failure: so a refused request consumes
// nothing. Any other error means that no hit was decided, as from Take.
//
// Take itself never returns a PartialError: a store that fails only some
// hits of a Take gives back what the others took and fails the call as a
// whole. So a caller that knows nothing of partial failures stays correct.
type PartialTaker interface {
	Refunder
	TakePartial(ctx context.Context, hits []Hit, out []Result) error
}
