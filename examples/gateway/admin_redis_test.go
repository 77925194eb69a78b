package main

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// TestAdminResetsAClientOnRedis is TestAdminResetsAClient on a
// redis-server started for the test.
func TestAdminResetsAClientOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ContextTimeoutEnabled: true, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { client.Close() })
	store, err := redisstore.New(client, redisstore.Config{Secret: []byte("test secret"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	testAdminResetsAClient(t, store)
}
