package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/redisstore/internal/conn"
)

// ErrUnsupportedClient reports a client New refuses (a Ring, a failover
// cluster client, or one whose options would re-run scripts or ignore
// deadlines), or a call the server refused because the client does not fit
// it (a Redis Cluster behind a client that is not a cluster client).
var ErrUnsupportedClient = errors.New("redisstore: unsupported client")

// ErrNoPermission reports a command Redis refused to the client's user:
// the ACL user it logs in as may not run a command the store sends (its
// scripts' commands included) or may not access the store's keys, or its
// credentials were refused. Such a call fails with a [*sluice.StoreError]
// whose Kind is [sluice.ErrInvalidConfig] and whose message names the
// permission to grant (see the package documentation for the whole ACL);
// no circuit breaker counts it, since Redis is well.
var ErrNoPermission = errors.New("redisstore: no permission")

// scriptCommands are the commands the store's scripts call, as ACL rules.
const scriptCommands = "+time +get +set +mget +exists +del +zadd +zrem +zrangebyscore +zremrangebyscore +pexpire"

// noPermission returns the error of a call Redis refused for want of a
// permission, naming what to grant, or nil when err is not such a refusal.
// A refusal from inside a script is ambiguous: the script may have written
// before the command refused.
// subcommands are the only subcommands the store sends of the commands
// that have them: what to grant when Redis names only the parent.
var subcommands = map[string]string{"script": "script|load", "config": "config|get", "cluster": "cluster|slots"}

func noPermission(op string, err error) *sluice.StoreError {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return nil
	}
	msg := rerr.Error()
	lower := strings.ToLower(msg)
	inScript := strings.Contains(lower, "@user_script") || strings.Contains(lower, "in script")
	var grant string
	switch {
	case strings.HasPrefix(msg, "WRONGPASS"), strings.HasPrefix(msg, "NOAUTH"):
		grant = "Redis refused the client's credentials: check its username and password"
	case strings.Contains(lower, "permissions to run the '"):
		_, name, _ := strings.Cut(lower, "permissions to run the '")
		name, _, _ = strings.Cut(name, "'")
		if sub, ok := subcommands[name]; ok && !strings.Contains(name, "|") {
			name = sub // Redis 6.0 names the parent of the subcommand it refused
		}
		grant = "grant the Redis user +" + name
	case strings.Contains(lower, "can't run this command"):
		grant = "grant the Redis user the commands the store's scripts call: " + scriptCommands
	case strings.Contains(lower, "permissions to access"), strings.Contains(lower, "can't access"):
		grant = "give the Redis user the store's keys: ~sl:* for the default Config.Prefix"
	case strings.HasPrefix(msg, "NOPERM"), strings.Contains(lower, "acl failure"):
		grant = "grant the Redis user the permissions the package documentation lists"
	default:
		return nil
	}
	return &sluice.StoreError{Op: op, Kind: sluice.ErrInvalidConfig, Ambiguous: inScript,
		Err: fmt.Errorf("%w: %s: %w", ErrNoPermission, grant, err)}
}

// classify turns a go-redis error into a [*sluice.StoreError] that says what
// kind of failure it was and whether the script may have run.
func classify(op string, err error) error {
	if se := noPermission(op, err); se != nil {
		// Before the pool's errors: a connection whose set-up Redis
		// refused (a PING the user may not send) makes none ready.
		return se
	}
	se := &sluice.StoreError{Op: op, Err: err}
	var rerr redis.Error
	var nerr net.Error
	var oerr *net.OpError
	switch {
	case errors.Is(err, errUnreachable), errors.Is(err, redis.ErrPoolTimeout):
		// Not sent (the endpoint was found unreachable), or no
		// connection was had: nothing was sent.
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

// worse returns the failure to report of two, a the earlier: the first,
// or the first ambiguous one.
func worse(a, b error) error {
	if a == nil || sluice.IsAmbiguous(b) && !sluice.IsAmbiguous(a) {
		return b
	}
	return a
}

// ctxError is the error of a call whose ctx is done before its reply:
// ambiguous when the script may have run.
func ctxError(ctx context.Context, ambiguous bool) error {
	return &sluice.StoreError{Op: "redisstore: take", Kind: conn.CtxKind(ctx), Ambiguous: ambiguous, Err: ctx.Err()}
}
