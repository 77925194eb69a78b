package sluiceotel_test

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/redistest/redisstoretest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// redisStore returns a Redis store configured by cfg on a redis-server of
// the test's own (redistest.Start: a free loopback port, stopped by its
// pid; skipped without redis-server unless REQUIRE_REDIS=1), and its
// client.
func redisStore(tb testing.TB, cfg redisstore.Config) (*redisstore.Store, redis.UniversalClient) {
	tb.Helper()
	return redisstoretest.Open(tb, redistest.Start(tb).Addr, cfg)
}
