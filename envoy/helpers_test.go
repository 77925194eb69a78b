package envoy_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// redisStore returns a Redis store on a redis-server of the test's own
// (redistest.Start: a free loopback port, stopped by its pid; skipped
// without redis-server unless REQUIRE_REDIS=1).
func redisStore(tb testing.TB) *redisstore.Store {
	tb.Helper()
	store, _ := redisStoreOn(tb)
	return store
}

// redisStoreOn is redisStore, with the server it runs on.
func redisStoreOn(tb testing.TB) (*redisstore.Store, *redistest.Server) {
	tb.Helper()
	srv := redistest.Start(tb)
	client, err := redisstore.NewClient(srv.Addr)
	if err != nil {
		tb.Fatal(err)
	}
	store, err := redisstore.New(client, redisstore.Config{Secret: []byte("envoy tests")})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = store.Close(ctx)
		_ = client.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := store.Ready(ctx); err != nil {
		tb.Fatalf("the Redis store is not ready: %v", err)
	}
	return store, srv
}
