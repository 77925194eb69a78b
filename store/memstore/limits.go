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
	slots [limitSlots]atomic.Pointer[validLimit]
}

const limitSlots = 16

// validLimit is a token-bucket limit that passed [sluice.Limit.Validate].
type validLimit struct {
	limit    sluice.Limit
	interval int64 // µs, IntervalMicros
	capacity int64
	tau      int64 // capacity × interval, µs
}

// tokenBucket returns l's numbers, or nil when l is not a valid limit.
func (m *limitMemo) tokenBucket(l sluice.Limit) *validLimit {
	slot := &m.slots[uint64(l.Rate^int64(l.Period)>>10^l.Burst)%limitSlots]
	if v := slot.Load(); v != nil && v.limit == l {
		return v
	}
	if sluice.TokenBucket.ValidateLimit(l) != nil {
		return nil
	}
	v := &validLimit{limit: l, interval: l.IntervalMicros(), capacity: l.Capacity()}
	v.tau = v.interval * v.capacity
	slot.Store(v)
	return v
}
