// Package redisstoretest gives a test a Redis store on a redis-server of
// its own, configured as a limiter needs: the setup shared by the tests of
// packages that run on the Redis store. It lives apart from redistest,
// which the Redis store's own tests import.
package redisstoretest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// Secret is the hash key of the stores New returns.
var Secret = []byte("test secret")

// New starts a redis-server for t (see redistest.Start: without
// redis-server it skips t, or fails it under REQUIRE_REDIS=1) and returns
// a store on it: a client that never retries a command and honours
// deadlines, a one-second timeout on every I/O step, [Secret], and a
// logger that discards. Store and client close when t ends.
func New(t testing.TB) *redisstore.Store {
	t.Helper()
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{
		Addr:                  srv.Addr,
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
		DialTimeout:           time.Second,
		ReadTimeout:           time.Second,
		WriteTimeout:          time.Second,
	})
	t.Cleanup(func() { client.Close() })
	store, err := redisstore.New(client, redisstore.Config{Secret: Secret, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close(context.Background()) })
	return store
}

// Open returns a store on the Redis at addr, built as a user builds one:
// a client from redisstore.NewClient and cfg, with [Secret] when cfg has
// none. It waits until the store is ready (failing t after 5 s), and
// closes store and client when t ends.
func Open(t testing.TB, addr string, cfg redisstore.Config) (*redisstore.Store, redis.UniversalClient) {
	t.Helper()
	client, err := redisstore.NewClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Secret == nil {
		cfg.Secret = Secret
	}
	store, err := redisstore.New(client, cfg)
	if err != nil {
		client.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = store.Close(ctx)
		_ = client.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := store.Ready(ctx); err != nil {
		t.Fatalf("the Redis store is not ready: %v", err)
	}
	return store, client
}

// Quiet wraps a package's tests (m, as TestMain runs them) so that
// go-redis's own logging (dial failures, Sentinel and Cluster chatter) is
// discarded while they run and the output shows the tests;
// SLUICE_REDIS_LOG=1 keeps it:
//
//	func TestMain(m *testing.M) { leakcheck.Main(redisstoretest.Quiet(redistest.ReportSkips(m))) }
func Quiet(m redistest.TestingM) redistest.TestingM { return quiet{m} }

type quiet struct{ m redistest.TestingM }

func (q quiet) Run() int {
	if os.Getenv("SLUICE_REDIS_LOG") == "" {
		redis.SetLogger(discard{})
	}
	return q.m.Run()
}

// discard is a go-redis logger that writes nothing.
type discard struct{}

func (discard) Printf(context.Context, string, ...any) {}
