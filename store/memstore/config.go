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
	// SweepInterval is how long a background goroutine takes to pass once
	// over every bucket, forgetting those that are full again. It works in
	// small steps (a sixteenth of the store's shards at a time, one shard
	// locked at a time), so no step stops the store. Default: 1 minute.
	// Negative disables the sweeper; buckets are then only forgotten by
	// [Store.Sweep] and by eviction at MaxBuckets.
	SweepInterval time.Duration
	// MaxBuckets bounds how many buckets the store holds. A call that
	// needs a new bucket when the store is full first evicts: buckets that
	// are full again, then those closest to being full again (see
	// "Bounded memory" in the package documentation for what that
	// forgives). Callers creating buckets at the same moment may exceed the
	// bound by their number, briefly. Default: [DefaultMaxBuckets].
	// Negative: no bound.
	MaxBuckets int
	// Events, if not nil, is told how many buckets each eviction removed.
	// The metrics package's Collector implements it. Default: nil.
	Events Events
}

// DefaultMaxBuckets is the bound on buckets of a [Config] that sets none:
// about 150 MB of token buckets under keys such as the rules build (see
// "Bounded memory" in the package documentation).
const DefaultMaxBuckets = 1 << 20

// Events receives what a [Store] reports about itself. Implementations
// must be safe for concurrent use and must not block.
type Events interface {
	// BucketsEvicted reports that the store, full, evicted n buckets to
	// make room for new ones.
	BucketsEvicted(n int)
}

const (
	defaultSweepInterval = time.Minute
)

func (c Config) withDefaults() Config {
	if c.SweepInterval == 0 {
		c.SweepInterval = defaultSweepInterval
	}
	if c.MaxBuckets == 0 {
		c.MaxBuckets = DefaultMaxBuckets
	}
	return c
}
