package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

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

// scriptCmd is a script command that go-redis never sends a second time:
// not after a timeout, a reset or an EOF (the script may have run), whatever
// the client's MaxRetries says. go-redis's cluster client re-sends a
// command after a timeout up to MaxRedirects times even with retries off;
// a script re-sent that way consumes twice. It still follows MOVED and
// ASK, which Redis answers without running the script, and it still
// re-sends a command that never reached the connection.
type scriptCmd struct{ *redis.Cmd }

// NoRetry reports that the command must never be sent again once it may
// have reached Redis.
func (scriptCmd) NoRetry() bool { return true }

// tryAgain reports whether a command Redis Cluster answered TRYAGAIN (its
// keys' slot is being migrated, and the keys are split between the two
// nodes for a moment) should be sent again, after waiting for the
// migration: Redis did not run it. It waits 10 ms per try, up to 3 tries,
// never past ctx's end.
func tryAgain(ctx context.Context, err error, try int) bool {
	if try >= 3 || !redis.HasErrorPrefix(err, "TRYAGAIN") {
		return false
	}
	t := time.NewTimer(10 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func newScriptCmd(ctx context.Context, args ...any) scriptCmd {
	return scriptCmd{redis.NewCmd(ctx, args...)}
}
