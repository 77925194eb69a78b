package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
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

// checkServer loads the script and warns when the server can evict the
// store's keys. It runs once, in the background, at New.
func (s *Store) checkServer(ctx context.Context) {
	if s.b.wrongClient(ctx) {
		s.wrong.Store(true)
		s.log.LogAttrs(ctx, slog.LevelError, "redisstore: every call fails: "+misconfigured().Error())
		return
	}
	err := s.client.ScriptLoad(ctx, takeSource).Err()
	if err == nil {
		err = s.client.ScriptLoad(ctx, refundSource).Err()
	}
	if errors.Is(err, context.Canceled) {
		return // the store was closed
	}
	if err != nil {
		if se := noPermission("redisstore: script load", err); se != nil {
			err = se
		}
		s.log.LogAttrs(ctx, slog.LevelWarn, "redisstore: could not preload the script; it is loaded on first use",
			slog.String("error", err.Error()))
		if !isReply(err) {
			return // the server did not answer: it would not answer CONFIG GET either
		}
	}
	s.policy.check(ctx, s)
}
