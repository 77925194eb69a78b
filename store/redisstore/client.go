package redisstore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Client is what the store needs of a go-redis client. A *redis.Client
// from [redis.NewClient] or [redis.NewFailoverClient] fits. The store sends
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
		return fmt.Errorf("%w: set %s in redis.Options (redisstore.NewClient sets both), or set Config.AllowUnsafeClient", ErrUnsupportedClient, strings.Join(fix, " and "))
	}
	return nil
}

// checkServer loads the script and warns when the server can evict the
// store's keys. It runs once, in the background, at New.
func (s *Store) checkServer(ctx context.Context) {
	if s.cluster == nil {
		info := redis.NewStringCmd(ctx, "info", "cluster")
		_ = s.client.Process(ctx, info)
		if v, err := info.Result(); err == nil && strings.Contains(v, "cluster_enabled:1") {
			s.wrong.Store(true)
			s.log.LogAttrs(ctx, slog.LevelError, "redisstore: every call fails: "+misconfigured().Error())
			return
		}
	}
	err := s.client.ScriptLoad(ctx, takeSource).Err()
	if err == nil {
		err = s.client.ScriptLoad(ctx, refundSource).Err()
	}
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "redisstore: could not preload the script; it is loaded on first use",
			slog.String("error", err.Error()))
		return
	}
	cfg, err := s.client.ConfigGet(ctx, "maxmemory*").Result()
	if err != nil {
		// Managed services often disable CONFIG: nothing to warn about.
		s.log.LogAttrs(ctx, slog.LevelDebug, "redisstore: cannot read the eviction policy", slog.String("error", err.Error()))
		return
	}
	if policy := cfg["maxmemory-policy"]; cfg["maxmemory"] != "0" && policy != "noeviction" {
		s.log.LogAttrs(ctx, slog.LevelWarn,
			"redisstore: Redis may evict rate-limit keys under memory pressure, and an evicted bucket forgets what it consumed; set maxmemory-policy noeviction or give the limiter its own Redis",
			slog.String("maxmemory-policy", policy), slog.String("maxmemory", cfg["maxmemory"]))
	}
}
