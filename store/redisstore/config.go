package redisstore

import (
	"log/slog"
	"time"

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
	// that can evict rate-limit keys). Default: [slog.Default].
	Logger *slog.Logger
	// StartupCheckTimeout bounds the background check New starts (loading
	// the script, reading the eviction policy). Default: 2 s. Negative
	// skips the check.
	StartupCheckTimeout time.Duration
	// Breaker configures the circuit breaker. The zero value enables it
	// with the defaults of [BreakerConfig].
	Breaker BreakerConfig
	// Events receives breaker transitions and script reloads (the metrics
	// package implements it). Default: none.
	Events sluice.StoreEvents
	// Coalesce, when above 1, lets up to that many concurrent Take calls
	// share one script call: while two calls are in flight, further calls
	// queue, and the next call carries them, each decided atomically on its
	// own, in queue order. There is no timer: a lone call on a store with fewer
	// than two calls in flight goes at once, under its own context, as
	// without coalescing. A batch runs until its
	// earliest member's deadline; a member that gives up gets an error
	// (ambiguous once its batch was sent) without cancelling the others.
	// So that no member's deadline times the others out, a queued call
	// whose context is done, or whose time left is no more than a round
	// trip takes (a moving average of recent successful calls), is left out
	// of its batch: it fails at once with an unambiguous [sluice.ErrTimeout]
	// ([sluice.ErrUnavailable] if its context was cancelled), which the
	// breaker does not count. A call whose context is done is never sent;
	// otherwise a call that finds fewer than two calls in flight is sent
	// whatever time it has left. Default: 0, off. 64 is a good value under
	// load.
	Coalesce int
	// Endpoint names the Redis endpoint in events and logs. Default: the
	// client's address (redis.Options.Addr), or "redis".
	Endpoint string
}

const (
	defaultPrefix              = "sl:"
	defaultStartupCheckTimeout = 2 * time.Second
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
	if c.StartupCheckTimeout == 0 {
		c.StartupCheckTimeout = defaultStartupCheckTimeout
	}
	return c
}
