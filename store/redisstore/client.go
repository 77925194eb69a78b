package redisstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
)

// Client is what the store needs of a go-redis client. The clients of
// [NewClient], [NewClusterClient] and [NewFailoverClient] fit, and so do
// those of [redis.NewClient], [redis.NewFailoverClient] and
// [redis.NewClusterClient] with the options the package documentation
// names. The store sends
// its script commands with Process, built whole, so they pass through the
// client's hooks like any other command. To observe or alter them, add a
// hook ([redis.Client.AddHook]): a wrapper type that overrides EvalSha
// would never see them.
type Client interface {
	redis.Scripter
	Process(ctx context.Context, cmd redis.Cmder) error
	ConfigGet(ctx context.Context, parameter string) *redis.MapStringStringCmd
}

// checkClient refuses clients that cannot keep the store's promises.
func checkClient(c Client, allowUnsafe bool) error {
	switch cc := c.(type) {
	case *redis.Ring:
		return fmt.Errorf("%w: a Ring spreads one request's keys over shards it does not fail over; use a single node, a Sentinel-managed primary (redis.NewFailoverClient) or Redis Cluster (redis.NewClusterClient)", ErrUnsupportedClient)
	case *redis.ClusterClient:
		return checkClusterClient(cc, allowUnsafe)
	}
	if allowUnsafe {
		return nil
	}
	oc, ok := c.(interface{ Options() *redis.Options })
	if !ok {
		return fmt.Errorf("%w: cannot inspect the options of a %T; disable its retries and enable context timeouts, then set Config.AllowUnsafeClient", ErrUnsupportedClient, c)
	}
	opt := oc.Options()
	var fix []string
	if opt.MaxRetries != 0 { // NewClient stores -1 (disabled) as 0
		fix = append(fix, "MaxRetries: -1 (a retry re-runs a script that may have run: one request would consume several times)")
	}
	if !opt.ContextTimeoutEnabled {
		fix = append(fix, "ContextTimeoutEnabled: true (otherwise the request's deadline is ignored and a slow Redis stalls every request)")
	}
	if len(fix) > 0 {
		return fmt.Errorf("%w: set %s in redis.Options, or set Config.AllowUnsafeClient; redisstore.NewClient and redisstore.NewFailoverClient set both, and Protocol: 2, without which the store keeps no ready connections", ErrUnsupportedClient, strings.Join(fix, " and "))
	}
	return nil
}

// misconfigured is the error of every call on a store whose start-up check
// found a Redis Cluster node behind a client that is not a cluster client.
func misconfigured() error {
	return &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrUnavailable,
		Err: fmt.Errorf("%w: the server is a Redis Cluster node (cluster_enabled:1) but the client is not a *redis.ClusterClient: build it with redisstore.NewClusterClient (one address is enough), or pass the ClusterClient itself, so that the store sends one script per hash slot", ErrUnsupportedClient)}
}

// checkClusterClient refuses cluster clients that cannot keep the store's
// promises. Their retry settings do not matter: the store's script commands
// say they must never be re-sent (see scriptCmd), which go-redis's cluster
// client honours whatever MaxRetries and MaxRedirects say.
func checkClusterClient(c *redis.ClusterClient, allowUnsafe bool) error {
	opt := c.Options()
	if opt.ClusterSlots != nil {
		// redis.NewFailoverClusterClient, or a hand-made slot map.
		return fmt.Errorf("%w: a ClusterClient with its own slot map (ClusterSlots, as redis.NewFailoverClusterClient makes) is meant to spread reads over replicas, which a limiter never does; for a Sentinel-managed primary use redis.NewFailoverClient, for Redis Cluster redis.NewClusterClient with the cluster's addresses", ErrUnsupportedClient)
	}
	if !allowUnsafe && !opt.ContextTimeoutEnabled {
		return fmt.Errorf("%w: set ContextTimeoutEnabled: true in redis.ClusterOptions (otherwise the request's deadline is ignored and a slow node stalls every request; redisstore.NewClusterClient sets it), or set Config.AllowUnsafeClient", ErrUnsupportedClient)
	}
	return nil
}
