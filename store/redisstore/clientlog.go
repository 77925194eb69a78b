package redisstore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
)

// SetClientLogger routes go-redis's own log lines through logger, each at
// level, with the attribute logger=go-redis. go-redis writes them (a failed
// dial, every time one fails while Redis is down; Sentinel's and Cluster's
// topology changes) to standard error by default, not through
// Config.Logger: its logger is one for the whole process, so this call
// routes the lines of every go-redis client in the process, not only the
// store's, and the last call (or [redis.SetLogger]) wins. The store never
// makes it on its own: call it once at start, before the clients run. A
// nil logger means [slog.Default].
func SetClientLogger(logger *slog.Logger, level slog.Level) {
	if logger == nil {
		logger = slog.Default()
	}
	redis.SetLogger(clientLogger{log: logger, level: level})
}

// clientLogger is a go-redis logger writing to a *slog.Logger.
type clientLogger struct {
	log   *slog.Logger
	level slog.Level
}

// Printf logs one go-redis line.
func (l clientLogger) Printf(ctx context.Context, format string, v ...any) {
	if ctx == nil {
		ctx = context.Background()
	}
	if !l.log.Enabled(ctx, l.level) {
		return
	}
	msg := strings.TrimSuffix(fmt.Sprintf(format, v...), "\n")
	l.log.LogAttrs(ctx, l.level, msg, slog.String("logger", "go-redis"))
}
