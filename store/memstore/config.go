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
	// Shards is the number of independently locked shards, rounded up to
	// a power of two. Default: 64.
	Shards int
	// SweepInterval is how often a background goroutine forgets buckets
	// that are full again. Default: 1 minute. Negative disables the
	// sweeper; buckets are then only forgotten by [Store.Sweep].
	SweepInterval time.Duration
}

const (
	defaultShards        = 64
	defaultSweepInterval = time.Minute
)

func (c Config) withDefaults() Config {
	if c.Shards <= 0 {
		c.Shards = defaultShards
	}
	n := 1
	for n < c.Shards {
		n <<= 1
	}
	c.Shards = n
	if c.SweepInterval == 0 {
		c.SweepInterval = defaultSweepInterval
	}
	return c
}
