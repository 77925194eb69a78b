package redisstore

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Client option defaults of [ClientOptions].
const (
	clientPoolSize = 64
	clientTimeout  = 500 * time.Millisecond
)

// NewClient returns a go-redis client for the Redis at addrOrURL, with every
// option the store needs: see [ClientOptions]. addrOrURL is host:port, or a
// URL as [redis.ParseURL] reads it (redis://, rediss:// for TLS, unix://),
// which may carry a password, a database number and options.
func NewClient(addrOrURL string) (*redis.Client, error) {
	opt, err := ClientOptions(addrOrURL)
	if err != nil {
		return nil, err
	}
	return redis.NewClient(opt), nil
}

// ClientOptions returns the options [NewClient] uses, to adjust before
// calling [redis.NewClient]. Whatever the URL says, they are:
//
//   - MaxRetries -1: a retry re-runs a script that may have run.
//   - ContextTimeoutEnabled: the request's deadline bounds socket I/O.
//   - DisableIdentity, Protocol 2 and maintenance notifications off: a new
//     connection's handshake is HELLO alone, without CLIENT SETINFO and
//     CLIENT MAINT_NOTIFICATIONS, each a round trip a limiter does not use.
//     (The store's script replies read the same in RESP2 and RESP3.)
//
// And unless the URL sets them:
//
//   - DialTimeout, ReadTimeout, WriteTimeout and PoolTimeout 500 ms. They
//     bound the store's background work (setting connections up, checks)
//     and calls without a deadline; a request's budget is its context's
//     deadline.
//   - DialerRetries 1: an unreachable Redis is reported at once, not after
//     five dials.
//   - PoolSize 64: the pool's connections are opened only when used; the
//     store holds its ready connections ([Config.Conns]) from it and leaves
//     two for its background checks.
func ClientOptions(addrOrURL string) (*redis.Options, error) {
	var opt *redis.Options
	if strings.Contains(addrOrURL, "://") {
		o, err := redis.ParseURL(addrOrURL)
		if err != nil {
			return nil, fmt.Errorf("redisstore: %w", err)
		}
		opt = o
	} else {
		if _, _, err := net.SplitHostPort(addrOrURL); err != nil {
			return nil, fmt.Errorf("redisstore: address %q: %w", addrOrURL, err)
		}
		opt = &redis.Options{Addr: addrOrURL}
	}
	opt.MaxRetries = -1
	opt.ContextTimeoutEnabled = true
	opt.DisableIdentity = true
	opt.Protocol = 2
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	for _, d := range []*time.Duration{&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolTimeout} {
		if *d == 0 {
			*d = clientTimeout
		}
	}
	if opt.DialerRetries == 0 {
		opt.DialerRetries = 1
	}
	if opt.PoolSize == 0 {
		opt.PoolSize = clientPoolSize
	}
	return opt, nil
}
