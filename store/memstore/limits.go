package memstore

import (
	"sync/atomic"

	"github.com/sluicehq/sluice"
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
	tbNums
}

// tbNums are the numbers a token-bucket decision needs (three words, passed
// in registers).
type tbNums struct {
	interval int64 // µs, IntervalMicros
	capacity int64
	tau      int64 // capacity × interval, µs
}

// tokenBucket returns l's numbers, and false when l is not a valid limit.
func (m *limitMemo) tokenBucket(l sluice.Limit) (tbNums, bool) {
	slot := &m.slots[uint64(l.Rate^int64(l.Period)>>10^l.Burst)%limitSlots]
	if v := slot.v.Load(); v != nil && v.limit == l {
		return v.tbNums, true
	}
	if sluice.TokenBucket.ValidateLimit(l) != nil {
		return tbNums{}, false
	}
	n := tbNums{interval: l.IntervalMicros(), capacity: l.Capacity()}
	n.tau = n.interval * n.capacity
	if slot.v.Load() == nil || slot.misses.Add(1)%memoPatience == 0 {
		slot.v.Store(&validLimit{limit: l, tbNums: n})
	}
	return n, true
}
