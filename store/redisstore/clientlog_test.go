package redisstore_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// go-redis's own lines (here: a dial that failed) go through the logger
// SetClientLogger names, at its level, marked as go-redis's. Not parallel:
// go-redis has one logger for the process.
func TestSetClientLogger(t *testing.T) {
	var out syncBuffer
	redisstore.SetClientLogger(slog.New(slog.NewTextHandler(&out, nil)), slog.LevelWarn)
	t.Cleanup(func() { // as the package's tests run: quiet unless SLUICE_REDIS_LOG=1
		if os.Getenv("SLUICE_REDIS_LOG") == "" {
			redisstore.SetClientLogger(quiet, slog.LevelWarn)
		} else {
			redisstore.SetClientLogger(slog.New(slog.NewTextHandler(os.Stderr, nil)), slog.LevelWarn)
		}
	})
	port, err := redistest.FreePort() // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c := redis.NewClient(safeOptions(addr))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), ceiling)
	defer cancel()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatalf("PING %s answered", addr)
	}
	for start := time.Now(); !strings.Contains(out.String(), addr); time.Sleep(time.Millisecond) {
		if time.Since(start) > ceiling {
			t.Fatalf("no line of go-redis's about the failed dial to %s; the logger got %q", addr, out.String())
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "logger=go-redis") {
			t.Errorf("line %q, want level=WARN and logger=go-redis", line)
		}
	}
}
