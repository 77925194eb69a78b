package redisstore

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/sluicehq/sluice"
)

// Client option defaults of [ClientOptions], [ClusterOptions] and
// [FailoverOptions].
const (
	clientPoolSize = 64
	clientTimeout  = 500 * time.Millisecond
)

// NewClient returns a go-redis client, with every option the store needs,
// for the Redis that addrs name, in the form you have it:
//
//   - one address (host:port), or one URL as [redis.ParseURL] reads it
//     (redis://, rediss:// for TLS, unix://), which may carry a password,
//     a database number and options: a single node, a [*redis.Client] with
//     the options of [ClientOptions];
//   - several addresses, or one redis:// or rediss:// URL with addr
//     parameters (redis://10.0.0.1:7000?addr=10.0.0.2:7000), as
//     [redis.ParseClusterURL] reads it: a Redis Cluster, any of its nodes as
//     seeds, a [*redis.ClusterClient] with the options of [ClusterOptions];
//   - one redis:// or rediss:// URL with a master_name parameter
//     (redis://10.0.0.1:26379?master_name=mymaster&addr=10.0.0.2:26379), as
//     [redis.ParseFailoverURL] reads it: the primary that the Sentinels at
//     the URL's addresses name, a [*redis.Client] from
//     [redis.NewFailoverClient] with the options of [FailoverOptions].
//
// A Redis Cluster known by one address only (the configuration endpoint of
// a managed service) needs [NewClusterClient]; a Sentinel-managed primary
// can also be given by name with [NewFailoverClient]. NewClient does no I/O.
// An address or URL it cannot read is an error wrapping
// [sluice.ErrInvalidConfig].
func NewClient(addrs ...string) (redis.UniversalClient, error) {
	if len(addrs) == 1 && strings.Contains(addrs[0], "://") {
		u, err := url.Parse(addrs[0])
		if err != nil {
			return nil, invalidURL(err)
		}
		switch q := u.Query(); {
		case q.Has("master_name"):
			return NewFailoverClient("", addrs[0])
		case q.Has("addr"):
			return NewClusterClient(addrs[0])
		}
	}
	if len(addrs) > 1 {
		return NewClusterClient(addrs...)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: redisstore: NewClient: no address", sluice.ErrInvalidConfig)
	}
	opt, err := ClientOptions(addrs[0])
	if err != nil {
		return nil, err
	}
	return redis.NewClient(opt), nil
}

// MustNewClient is like [NewClient] but panics on an error, for addresses
// fixed in code.
func MustNewClient(addrs ...string) redis.UniversalClient {
	c, err := NewClient(addrs...)
	if err != nil {
		panic(err)
	}
	return c
}

// NewClusterClient returns a client of the Redis Cluster that addrs seed,
// with the options of [ClusterOptions]: any of the cluster's nodes, one
// is enough (the configuration endpoint of a managed service), or one
// redis:// or rediss:// URL as [redis.ParseClusterURL] reads it. It does no
// I/O.
func NewClusterClient(addrs ...string) (*redis.ClusterClient, error) {
	opt, err := ClusterOptions(addrs...)
	if err != nil {
		return nil, err
	}
	return redis.NewClusterClient(opt), nil
}

// NewFailoverClient returns a client of the primary that the Sentinels at
// sentinelAddrs name masterName, with the options of [FailoverOptions]. It
// follows the primary through failovers. sentinelAddrs may also be one
// redis:// or rediss:// URL as [redis.ParseFailoverURL] reads it, whose
// master_name parameter masterName, when not empty, replaces. It does no
// I/O.
func NewFailoverClient(masterName string, sentinelAddrs ...string) (*redis.Client, error) {
	opt, err := FailoverOptions(masterName, sentinelAddrs...)
	if err != nil {
		return nil, err
	}
	return redis.NewFailoverClient(opt), nil
}

// ClientOptions returns the options of a single node's client, to adjust
// before calling [redis.NewClient]; [NewClient] uses them. addrOrURL is
// host:port, or a URL as [redis.ParseURL] reads it. Whatever the URL says,
// they are:
//
//   - MaxRetries -1: a retry re-runs a script that may have run.
//   - ContextTimeoutEnabled: the request's deadline bounds socket I/O.
//   - Protocol 2 and maintenance notifications off: go-redis records, in
//     the options that the client and its dedicated connections share, that
//     a server refused maintenance notifications, when a connection's
//     handshake asks for them; the store sets its ready connections up
//     concurrently (see the package documentation), which it does only on
//     a client whose handshake cannot ask. (The store's script replies read
//     the same in RESP2 and RESP3.)
//   - DisableIdentity: the handshake is HELLO alone, without CLIENT
//     SETINFO, a round trip a limiter does not use.
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
//
// A client built by hand needs MaxRetries -1, ContextTimeoutEnabled and
// Protocol 2: [New] refuses it without the first two, and without the
// third keeps no ready connections and logs a warning saying so.
func ClientOptions(addrOrURL string) (*redis.Options, error) {
	var opt *redis.Options
	if strings.Contains(addrOrURL, "://") {
		o, err := redis.ParseURL(addrOrURL)
		if err != nil {
			return nil, invalidURL(err)
		}
		opt = o
	} else {
		if err := checkAddr(addrOrURL); err != nil {
			return nil, err
		}
		opt = &redis.Options{Addr: addrOrURL}
	}
	opt.MaxRetries = -1
	opt.ContextTimeoutEnabled = true
	opt.DisableIdentity = true
	opt.Protocol = 2
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	defaults(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolTimeout, &opt.DialerRetries, &opt.PoolSize)
	return opt, nil
}

// ClusterOptions returns the options of a Redis Cluster client, to adjust
// before calling [redis.NewClusterClient]; [NewClusterClient] uses them.
// addrs are host:port addresses of any of the cluster's nodes, or one URL as
// [redis.ParseClusterURL] reads it. They are those of [ClientOptions],
// except that the pool's size is per node; and, whatever the URL says,
// commands go to masters only (ReadOnly, RouteByLatency and RouteRandomly
// off). MaxRedirects keeps its default, so MOVED and ASK are followed: the
// store's scripts are never re-sent once they may have run, whatever
// MaxRetries and MaxRedirects say.
//
// A cluster client built by hand needs ContextTimeoutEnabled; [New] refuses
// it without.
func ClusterOptions(addrs ...string) (*redis.ClusterOptions, error) {
	var opt *redis.ClusterOptions
	if len(addrs) == 1 && strings.Contains(addrs[0], "://") {
		o, err := redis.ParseClusterURL(addrs[0])
		if err != nil {
			return nil, invalidURL(err)
		}
		opt = o
	} else {
		if err := checkAddrs("cluster", addrs); err != nil {
			return nil, err
		}
		opt = &redis.ClusterOptions{Addrs: slices.Clone(addrs)}
	}
	opt.ReadOnly, opt.RouteByLatency, opt.RouteRandomly = false, false, false
	opt.MaxRetries = -1
	opt.ContextTimeoutEnabled = true
	opt.DisableIdentity = true
	opt.Protocol = 2
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	defaults(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolTimeout, &opt.DialerRetries, &opt.PoolSize)
	return opt, nil
}

// FailoverOptions returns the options of a client of a Sentinel-managed
// primary, to adjust before calling [redis.NewFailoverClient];
// [NewFailoverClient] uses them. sentinelAddrs are the host:port addresses
// of Sentinels that monitor masterName, or one URL as
// [redis.ParseFailoverURL] reads it (its userinfo is the Sentinels'
// credentials, its username and password parameters the primary's), whose
// master_name parameter masterName, when not empty, replaces. They are
// those of [ClientOptions], the timeouts applying to the Sentinels too;
// and, whatever the URL says, commands go to the primary only
// (ReplicaOnly, RouteByLatency and RouteRandomly off).
//
// A failover client built by hand needs MaxRetries -1 and
// ContextTimeoutEnabled; [New] refuses it without. go-redis turns
// maintenance notifications off on every failover client.
func FailoverOptions(masterName string, sentinelAddrs ...string) (*redis.FailoverOptions, error) {
	var opt *redis.FailoverOptions
	if len(sentinelAddrs) == 1 && strings.Contains(sentinelAddrs[0], "://") {
		o, err := redis.ParseFailoverURL(sentinelAddrs[0])
		if err != nil {
			return nil, invalidURL(err)
		}
		opt = o
	} else {
		if err := checkAddrs("Sentinel", sentinelAddrs); err != nil {
			return nil, err
		}
		opt = &redis.FailoverOptions{SentinelAddrs: slices.Clone(sentinelAddrs)}
	}
	if masterName != "" {
		opt.MasterName = masterName
	}
	if opt.MasterName == "" {
		return nil, fmt.Errorf("%w: redisstore: no Sentinel master name", sluice.ErrInvalidConfig)
	}
	opt.ReplicaOnly, opt.RouteByLatency, opt.RouteRandomly = false, false, false
	opt.MaxRetries = -1
	opt.ContextTimeoutEnabled = true
	opt.DisableIdentity = true
	opt.Protocol = 2
	defaults(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolTimeout, &opt.DialerRetries, &opt.PoolSize)
	return opt, nil
}

// defaults sets the timeouts, DialerRetries and PoolSize of client options
// that leave them unset.
func defaults(dial, read, write, pool *time.Duration, dialerRetries, poolSize *int) {
	for _, d := range []*time.Duration{dial, read, write, pool} {
		if *d == 0 {
			*d = clientTimeout
		}
	}
	if *dialerRetries == 0 {
		*dialerRetries = 1
	}
	if *poolSize == 0 {
		*poolSize = clientPoolSize
	}
}

// checkAddr checks that addr is host:port.
func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	switch {
	case err != nil:
		return fmt.Errorf("%w: redisstore: address %q: %w", sluice.ErrInvalidConfig, addr, err)
	case host == "" || port == "":
		return fmt.Errorf("%w: redisstore: address %q: want host:port", sluice.ErrInvalidConfig, addr)
	}
	return nil
}

// checkAddrs checks that addrs, the addresses of a cluster's nodes or of
// Sentinels (what), are one or more host:port.
func checkAddrs(what string, addrs []string) error {
	if len(addrs) == 0 {
		return fmt.Errorf("%w: redisstore: no %s address", sluice.ErrInvalidConfig, what)
	}
	for _, a := range addrs {
		if strings.Contains(a, "://") {
			return fmt.Errorf("%w: redisstore: %q: a URL must be the only address", sluice.ErrInvalidConfig, a)
		}
		if err := checkAddr(a); err != nil {
			return err
		}
	}
	return nil
}

// invalidURL reports a URL go-redis or net/url cannot read, without the
// URL itself, which may hold a password.
func invalidURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("%w: redisstore: URL: %w", sluice.ErrInvalidConfig, err)
}
