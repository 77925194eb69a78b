package conn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
)

// ErrNoConn is the error of a request that found no ready connection:
// while the endpoint cannot be reached, or within its budget. Nothing was
// sent. The breaker counts the first (the set-up failed), not the second:
// the calls holding the connections report how Redis is doing.
var ErrNoConn = fmt.Errorf("%w: no ready connection", redis.ErrPoolTimeout)

// CtxKind is the kind of error of a call whose ctx is done: a timeout, or
// unavailable when its caller cancelled it.
func CtxKind(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return sluice.ErrTimeout
	}
	return sluice.ErrUnavailable
}

// ClosedByPeer reports whether err says the server closed the connection.
func ClosedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// IsReply reports whether err is an error reply from Redis, which leaves
// its connection in sync.
func IsReply(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr)
}
