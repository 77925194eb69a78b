package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
)

// ErrUnsupportedClient reports a client New refuses (a Ring, a failover
// cluster client, or one whose options would re-run scripts or ignore
// deadlines), or a call the server refused because the client does not fit
// it (a Redis Cluster behind a client that is not a cluster client).
var ErrUnsupportedClient = errors.New("redisstore: unsupported client")

// classify turns a go-redis error into a [*sluice.StoreError] that says what
// kind of failure it was and whether the script may have run.
func classify(op string, err error) error {
	se := &sluice.StoreError{Op: op, Err: err}
	var rerr redis.Error
	var nerr net.Error
	var oerr *net.OpError
	switch {
	case errors.Is(err, redis.ErrPoolTimeout):
		// No connection was had: nothing was sent.
		se.Kind = sluice.ErrUnavailable
	case errors.As(err, &oerr) && oerr.Op == "dial":
		se.Kind = sluice.ErrUnavailable
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		se.Kind, se.Ambiguous = sluice.ErrTimeout, true
	case errors.Is(err, context.Canceled):
		se.Kind, se.Ambiguous = sluice.ErrUnavailable, true
	case errors.Is(err, redis.ErrClosed):
		se.Kind = sluice.ErrClosed
	case errors.As(err, &rerr) && redis.HasErrorPrefix(err, "CROSSSLOT"):
		// The client sent one script for keys in several slots: it is a
		// cluster client the store did not recognise. Redis refused the
		// script; the cluster is fine.
		se.Kind = sluice.ErrUnavailable
		se.Err = fmt.Errorf("%w: %w: pass the *redis.ClusterClient itself, so that the store sends one script per hash slot", ErrUnsupportedClient, err)
	case errors.As(err, &rerr):
		se.Kind = classifyReply(rerr.Error())
	default:
		// EOF, resets and the like: the command may have reached Redis.
		se.Kind, se.Ambiguous = sluice.ErrUnavailable, true
	}
	return se
}

// classifyReply classifies an error reply from Redis. Replies come after the
// server refused or aborted the script, so none is ambiguous: the script
// writes nothing before its last step, and fails before it.
func classifyReply(msg string) error {
	code, _, _ := strings.Cut(msg, " ")
	if code == "ERR" && strings.HasPrefix(msg, "ERR Error running script") {
		// Redis 6 wraps an error a command raised inside a script:
		// "ERR Error running script (call to f_…): @user_script:63:
		// WRONGTYPE Operation against …". Redis 7 passes it on as it is.
		if _, inner, ok := strings.Cut(msg, ": @user_script:"); ok {
			if _, inner, ok = strings.Cut(inner, ": "); ok {
				code, _, _ = strings.Cut(inner, " ")
			}
		}
	}
	switch code {
	case "WRONGTYPE", "SLUICECORRUPT":
		return sluice.ErrCorruptState
	case "NOSCRIPT":
		return sluice.ErrScriptMissing
	case "CLUSTERDOWN", "MOVED", "ASK", "TRYAGAIN":
		return sluice.ErrClusterDown
	}
	return sluice.ErrUnavailable
}
