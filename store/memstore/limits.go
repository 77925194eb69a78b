package memstore

import (
	"sync/atomic"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/algo"
)

// limitMemo remembers a few token-bucket limits already validated, with
// their emission interval and capacity, so that the single-hit path neither
// validates the same limit again nor divides for its interval on every
// call. It is direct-mapped: a limit is looked for in one slot, chosen by
// its numbers, and a miss validates and overwrites that slot. The slots are
// only written on a miss, so callers that share limits share read-only
// memory.
type limitMemo struct {
	slots [limitSlots]memoSlot
}

const limitSlots = 64

// memoSlot holds one limit. A miss overwrites it only when it is empty or
// after memoPatience misses in a row, so limits that share a slot do not
// allocate a new entry on every call.
type memoSlot struct {
	v      atomic.Pointer[validLimit]
	misses atomic.Uint32
}

const memoPatience = 64

// validLimit is a token-bucket limit that passed [sluice.Limit.Validate],
// with its numbers.
type validLimit struct {
	limit sluice.Limit
	nums  algo.TBNums
}

// tokenBucket returns l's numbers, and false when l is not a valid limit.
func (m *limitMemo) tokenBucket(l sluice.Limit) (algo.TBNums, bool) {
	slot := &m.slots[uint64(l.Rate^int64(l.Period)>>10^l.Burst)%limitSlots]
	if v := slot.v.Load(); v != nil && v.limit == l {
		return v.nums, true
	}
	if sluice.TokenBucket.ValidateLimit(l) != nil {
		return algo.TBNums{}, false
	}
	n := algo.NewTBNums(l.IntervalMicros(), l.Capacity())
	if slot.v.Load() == nil || slot.misses.Add(1)%memoPatience == 0 {
		slot.v.Store(&validLimit{limit: l, nums: n})
	}
	return n, true
}
