package redisstore

import "github.com/sluicehq/sluice"

// Penalties (see [sluice.Hit.Block]). A bucket whose hits carry a penalty
// keeps, in its Redis value before its state, the time its block ends, the
// refusals counted toward the next block and when their period began
// (see take.lua); a reset deletes the key, so it lifts the block too.

// codeBlocked is the code of a hit refused by its penalty in the take
// script's reply: allowed and unsatisfiable at once, which no other hit
// is.
const codeBlocked = 3

// penaltyArgs appends to cmd the penalty arguments of h: its block and
// after, and its limit's period (over which refusals are counted), in µs.
func penaltyArgs(cmd []any, h *sluice.Hit) []any {
	return append(cmd, h.Block.Microseconds(), h.Refusals(), h.Limit.PeriodMicros())
}
