package redisstore

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice"
)

// Config configures a [Store]. The zero value is ready to use; each field
// documents its default. New never modifies the caller's Config.
type Config struct {
	// Prefix starts every key. Default: "sl:". It must not contain '{'
	// or '}', which would change the key's hash tag.
	Prefix string
	// Secret keys the hash that turns identities into Redis keys. Every
	// instance sharing a limit must use the same Secret. Default: a
	// built-in, public key, which still keeps identities out of keys in
	// clear but lets anyone holding a dump test guesses (an IPv4 address
	// has only 2^32 values): set a random secret of 32 bytes in production.
	// Without one, New logs a warning saying so.
	Secret []byte
	// AllowUnsafeClient skips the check of the client's options (see the
	// package documentation). Only for clients whose options cannot be
	// inspected, or whose retries you have disabled some other way.
	AllowUnsafeClient bool
	// Logger receives the start-up warnings (such as an eviction policy
	// that can evict rate-limit keys). Default: [slog.Default]. go-redis's
	// own lines go to standard error unless routed with [SetClientLogger].
	Logger *slog.Logger
	// StartupCheckTimeout bounds the background check New starts (loading
	// the script, reading the eviction policy). Default: 2 s. Negative
	// skips the check.
	StartupCheckTimeout time.Duration
	// PolicyCheckInterval is how often the store reads the server's
	// eviction policy (maxmemory and maxmemory-policy) after the start-up
	// check: a policy that can evict rate-limit keys is logged as a
	// warning when it is first seen, and reported to Events when they
	// implement [sluice.EvictionPolicyEvents]. Default: 1 minute. Negative
	// checks only at start.
	PolicyCheckInterval time.Duration
	// Breaker configures the circuit breaker. The zero value enables it
	// with the defaults of [BreakerConfig].
	Breaker BreakerConfig
	// Events receives breaker transitions and script reloads, and each
	// breaker's start when it implements [sluice.BreakerStartedEvents]
	// (the metrics package implements both). Default: none.
	Events sluice.StoreEvents
	// Coalesce is how many concurrent Take calls may share one script
	// call. Default: 64. 1 or negative turns coalescing off: every call is
	// its own script call.
	//
	// While CoalesceLanes script calls are in flight, further calls queue,
	// and the next call carries them, each decided atomically on its own,
	// in queue order. There is no timer: a call that finds a free lane goes
	// at once, under its own context, as without coalescing, so a store
	// with fewer concurrent calls than lanes behaves as if it did not
	// coalesce. A batch runs until its earliest member's deadline; a member
	// that gives up gets an error (ambiguous once its batch was sent)
	// without cancelling the others. So that no member's deadline times the
	// others out, a queued call whose context is done, or whose time left
	// is no more than a round trip takes (a moving average of recent
	// successful calls), is left out of its batch: it fails at once with an
	// unambiguous [sluice.ErrTimeout] ([sluice.ErrUnavailable] if its
	// context was cancelled), which the breaker does not count. A call
	// whose context is done is never sent; otherwise a call that finds a
	// free lane is sent whatever time it has left.
	//
	// On Redis Cluster a script call is one hash slot's, so each slot has
	// its own lanes and queue. A request whose hits lie in several slots
	// sends each slot's part through that slot's lanes, the slots side by
	// side: the parts that find a free lane go at once in one pipeline,
	// the others join their slots' next calls; if one part refuses, what
	// the others took is given back exactly, as without coalescing.
	Coalesce int
	// CoalesceLanes is how many script calls a coalescing store keeps in
	// flight. When every lane is busy and the oldest queued call has waited
	// more than half a round trip, the queue goes at once on a spare lane,
	// up to half as many again (6 in all by default): calls sent together
	// return together, and a call queued just after them would otherwise
	// wait a whole round trip before its own. Default: 4.
	CoalesceLanes int
	// Conns is how many ready connections the store keeps: connections it
	// takes from the client's pool ([redis.Client.Conn]) and sets up in the
	// background, handshake done and PINGed, before any request may use
	// them (see the package documentation). A call in flight holds one, so
	// by Little's law a store needs its rate of script calls times their
	// worst round trip: without coalescing, 1,000 checks/s at 20 ms need 20
	// connections, 2,000/s at 50 ms need 100. With coalescing, at most
	// 1.5 × CoalesceLanes calls are in flight whatever the rate, so twice
	// CoalesceLanes leaves room for replacements. Default: 2 × CoalesceLanes when
	// coalescing, else 32; a default never exceeds the client's PoolSize
	// less 2, which the client keeps for the store's background checks.
	// Negative turns ready connections off: commands go through the
	// client's pool, and a connection it opens is set up on first use,
	// inside that request's budget.
	//
	// Only a [*redis.Client] (from [redis.NewClient], [NewClient] or
	// [redis.NewFailoverClient]) hands out connections; with any other
	// client, such as a wrapper type, the store sends every command through
	// the client's Process. Ready connections are the client's at the time
	// they are set up: add hooks to the client before [New].
	Conns int
	// SetupTimeout bounds the background set-up of one connection: dial,
	// handshake and PING. Default: 1 s.
	SetupTimeout time.Duration
	// Endpoint names the Redis endpoint in events and logs. Default: the
	// client's address (redis.Options.Addr), or "redis".
	Endpoint string
	// RememberRefusals is how long, at most, the store remembers a bucket
	// it refused: until the refusal's RetryAfter has passed, and no longer
	// than this, later Takes that need that bucket at the refused cost (a
	// token bucket's, at that cost or more) are refused in process, with no
	// script call (their results are marked [sluice.Result.Remembered]). So
	// a flood on a refused bucket costs Redis, per process, one script call
	// every min(RetryAfter, RememberRefusals) for each of the bucket's
	// checks in flight when the memory lapses, plus one per request
	// admitted: a number of calls a second whatever the flood's rate, and
	// a cost per request that falls as the rate grows.
	//
	// It is exact while others only consume: a refused bucket cannot admit
	// that cost before its RetryAfter, counted from when the call was sent.
	// Tokens that come back early elsewhere (another process's refund or
	// reset, a lease given back, a raised limit) reach this process's
	// checks within RememberRefusals; refunds and resets made through this
	// store reach them at once. A Take with a shadow hit, a peek or a
	// forced hit always goes to Redis. Default: 1 s. Negative turns it off.
	RememberRefusals time.Duration
	// PresenceInterval is how often the store marks itself present in
	// Redis, under Prefix + "{instances}", and counts the stores sharing
	// its keys ([Store.Instances]): those seen within three intervals. The
	// middleware's local fallback and the lease store divide limits by the
	// count unless given one; while Redis does not answer, the last count
	// stands. Close removes the store's mark at once. Default: 2 s.
	// Negative turns counting off.
	PresenceInterval time.Duration
	// RefusalMemory is how many refused buckets the store remembers at
	// most, in a table of about 8 bytes a slot plus 120 bytes a refused
	// bucket; a flood of distinct keys replaces entries, never grows it.
	// Default: 65,536. Negative is an error.
	RefusalMemory int
	// Clock is this process's clock, which places the period boundaries
	// sent with a calendar limit's hits ([sluice.PerCalendar]): the script
	// counts in the period among them that holds the server's clock, so a
	// process clock off by less than a period never chooses the period.
	// Default: [sluice.SystemClock]. Tests that decide by a fake clock set
	// it to the same clock.
	Clock sluice.Clock
}

const (
	defaultPrefix              = "sl:"
	defaultStartupCheckTimeout = 2 * time.Second
	defaultPolicyCheckInterval = time.Minute
	defaultCoalesce            = 64
	defaultUncoalescedConns    = 32
	defaultSetupTimeout        = time.Second
	defaultPresenceInterval    = 2 * time.Second
	// reservedConns are the client's pool connections the store leaves for
	// its background checks (loading the script, reading the policy).
	reservedConns = 2
)

// defaultSecret is public: see Config.Secret.
var defaultSecret = []byte("sluice redisstore default key; set Config.Secret")

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = defaultPrefix
	}
	if len(c.Secret) == 0 {
		c.Secret = defaultSecret
	}
	c.Secret = append([]byte(nil), c.Secret...)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.PolicyCheckInterval == 0 {
		c.PolicyCheckInterval = defaultPolicyCheckInterval
	}
	if c.StartupCheckTimeout == 0 {
		c.StartupCheckTimeout = defaultStartupCheckTimeout
	}
	if c.Coalesce == 0 {
		c.Coalesce = defaultCoalesce
	}
	if c.CoalesceLanes <= 0 {
		c.CoalesceLanes = defaultLanes
	}
	if c.SetupTimeout <= 0 {
		c.SetupTimeout = defaultSetupTimeout
	}
	if c.PresenceInterval == 0 {
		c.PresenceInterval = defaultPresenceInterval
	}
	return c
}

// conns returns how many ready connections to keep on a client with
// options opt (nil when unknown), or an error naming the fields to change.
func (c Config) conns(opt *redis.Options) (int, error) {
	if c.Conns < 0 {
		return 0, nil
	}
	limit := -1
	if opt != nil && opt.PoolSize > 0 {
		limit = opt.PoolSize - reservedConns
	}
	if c.Conns > 0 {
		if limit >= 0 && c.Conns > limit {
			return 0, fmt.Errorf("redisstore: Config.Conns %d needs redis.Options.PoolSize of at least %d (it is %d): raise PoolSize or lower Conns", c.Conns, c.Conns+reservedConns, opt.PoolSize)
		}
		return c.Conns, nil
	}
	n := defaultUncoalescedConns
	if c.Coalesce > 1 {
		n = 2 * c.CoalesceLanes
	}
	if limit >= 0 {
		n = min(n, limit)
	}
	return n, nil
}

// warnPublicSecret says, once for the store New is creating, that no
// Config.Secret was set: the identities in the keys are hashed with a key
// anyone can read in sluice's source.
func warnPublicSecret(log *slog.Logger) {
	log.Warn("redisstore: Config.Secret is not set: identities (client IPs, API keys, users) are hashed into " +
		"Redis keys with sluice's built-in PUBLIC key, so anyone who can read the keys can test guesses against " +
		"them. Set Config.Secret to 32 random bytes, the same on every instance.")
}
