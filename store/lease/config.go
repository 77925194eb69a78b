package lease

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice"
)

// Config configures a [Store]. The zero value is ready to use; each field
// documents its default. New never modifies the caller's Config.
type Config struct {
	// Clock tells the time leases expire by. Default: the system's
	// monotonic clock. Tests pass a fake clock and step it.
	Clock sluice.Clock
	// Instances is how many processes are expected to share the backing
	// store's buckets. It bounds K (see [MaxLease]): the drift bound
	// Instances × K holds only when it is at least the real number of
	// processes, so set it to that (or to an upper bound of it). Default:
	// the count of a backing store that counts the instances sharing it
	// ([sluice.InstanceCounter], as the Redis store does), read at each
	// refill (1 until its first count); else 1, and [New] logs a warning
	// when it leases.
	Instances int
	// DriftBudget is the share of a limit's allowance over a minute
	// (burst + 60 s × rate) that the instances' leases together may hold:
	// Instances × K stays within it. Default: 0.05 (5 %). At most 1.
	DriftBudget float64
	// TTL is how long a lease is served from, when the rule's policy does
	// not say. Default: 2 s. From 1 ms to 1 min.
	TTL time.Duration
	// MaxLease caps K for every rule. Default: 64.
	MaxLease int64
	// Default is the policy of hits whose [sluice.Hit.Lease] is nil.
	// Default: nil, such hits pass through unleased.
	Default *sluice.LeasePolicy
	// MaxKeys bounds the keys that hold lease state at once; further keys
	// pass through unleased until expired leases are swept. Default:
	// 65,536.
	MaxKeys int
	// MaxRules bounds the rules (policies) whose hot keys are tracked at
	// once; beyond it, hot-key detection restarts. Default: 256.
	MaxRules int
	// TopK is how many hot keys are tracked per rule. Default: 16.
	TopK int
	// SweepInterval is how often a background goroutine gives back the
	// unused tokens of expired leases. Default: 1 s. Negative disables
	// it; then only [Store.Sweep] gives them back.
	SweepInterval time.Duration
	// Observer receives lease and hot-key events (the metrics package's
	// LeaseCollector implements it). Default: none.
	Observer Observer
	// Logger gets a line when a key turns hot and when it cools, and when
	// a refund cannot be delivered. Default: [slog.Default].
	Logger *slog.Logger
	// RememberRefusals is how long, at most, the store remembers a bucket
	// it refused when the backing store is behind a network: until the
	// refusal's RetryAfter, and no longer than this, later calls that need
	// that bucket at the refused cost are refused in process, by TakeLocal
	// too, with no backing call (their results are marked
	// [sluice.Result.Remembered]). A dry lease so stops refilling until its
	// bucket could pass again (a saturated token bucket's, until its next
	// refill is due: see the package documentation). It follows the rules of the Redis store's
	// Config.RememberRefusals; lease give-backs of other processes reach
	// this one within it. Default: 1 s. Negative turns it off. Over an
	// in-process backing store nothing is remembered.
	RememberRefusals time.Duration
	// RefusalMemory is how many refused buckets the store remembers at
	// most. Default: 65,536. Negative is an error.
	RefusalMemory int
}

const (
	defaultTTL      = 2 * time.Second
	defaultMaxLease = 64
	defaultBudget   = 0.05
	defaultMaxKeys  = 1 << 16
	defaultMaxRules = 256
	defaultTopK     = 16
	defaultSweep    = time.Second
	maxTopK         = 256
)

// validate reports the first field of c that is invalid, in an error
// wrapping [sluice.ErrInvalidConfig] that names it.
func (c Config) validate() error {
	fail := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: lease: Config.%s: %s", sluice.ErrInvalidConfig, field, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Instances < 0:
		return fail("Instances", "%d is negative", c.Instances)
	case c.DriftBudget < 0 || c.DriftBudget > 1 || c.DriftBudget != c.DriftBudget:
		return fail("DriftBudget", "%v: must be from 0 (default) to 1", c.DriftBudget)
	case c.TTL < 0 || c.TTL > 0 && c.TTL < time.Millisecond || c.TTL > time.Minute:
		return fail("TTL", "%v: must be 0 (default) or from 1ms to 1m", c.TTL)
	case c.MaxLease < 0:
		return fail("MaxLease", "%d is negative", c.MaxLease)
	case c.MaxKeys < 0:
		return fail("MaxKeys", "%d is negative", c.MaxKeys)
	case c.MaxRules < 0:
		return fail("MaxRules", "%d is negative", c.MaxRules)
	case c.TopK < 0 || c.TopK > maxTopK:
		return fail("TopK", "%d: must be from 0 (default) to %d", c.TopK, maxTopK)
	case c.RefusalMemory < 0:
		return fail("RefusalMemory", "%d is negative", c.RefusalMemory)
	}
	if c.Default != nil {
		if err := c.Default.Validate(); err != nil {
			return fail("Default", "%v", err)
		}
	}
	return nil
}

// withDefaults returns c with every zero field that has a default set to
// it.
func (c Config) withDefaults() Config {
	if c.DriftBudget == 0 {
		c.DriftBudget = defaultBudget
	}
	if c.TTL == 0 {
		c.TTL = defaultTTL
	}
	if c.MaxLease == 0 {
		c.MaxLease = defaultMaxLease
	}
	if c.MaxKeys == 0 {
		c.MaxKeys = defaultMaxKeys
	}
	if c.MaxRules == 0 {
		c.MaxRules = defaultMaxRules
	}
	if c.TopK == 0 {
		c.TopK = defaultTopK
	}
	if c.SweepInterval == 0 {
		c.SweepInterval = defaultSweep
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
