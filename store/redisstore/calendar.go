package redisstore

import (
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/algo"
)

// Calendar limits. Lua has no time zone data, so a calendar hit carries
// four consecutive boundaries of its limit's periods around this
// process's now (see take.lua); the script counts in the period among
// them that holds the server's clock.

// calendarArgs appends to cmd four boundaries of l's calendar periods
// around the process's now, in µs.
func (d *decider) calendarArgs(cmd []any, l sluice.Limit) []any {
	c := d.clock
	if c == nil {
		c = sluice.SystemClock
	}
	b := algo.Bounds(l, c.Now().UnixMicro())
	return append(cmd, b[0], b[1], b[2], b[3])
}

// setCalendarClock makes b's scripts place calendar boundaries by clock
// (nil: the system clock).
func setCalendarClock(b backend, clock sluice.Clock) {
	switch b := b.(type) {
	case *node:
		b.scripts.clock = clock
	case *cluster:
		b.scripts.clock = clock
	}
}
