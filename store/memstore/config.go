package memstore

import (
	"time"

	"github.com/sluicehq/sluice"
)

// Config configures a [Store]. The zero value is ready to use; each field
// documents its default. New never modifies the caller's Config.
type Config struct {
	// Clock tells the time. Default: the system's monotonic clock, so a
	// wall-clock jump neither mints nor withholds tokens. Tests pass a fake
	// clock and step it.
	Clock sluice.Clock
	// SweepInterval is how often a background goroutine forgets buckets
	// that are full again. Default: 1 minute. Negative disables the
	// sweeper; buckets are then only forgotten by [Store.Sweep].
	SweepInterval time.Duration
}

const (
	defaultSweepInterval = time.Minute
)

func (c Config) withDefaults() Config {
	if c.SweepInterval == 0 {
		c.SweepInterval = defaultSweepInterval
	}
	return c
}
