package sluicegrpc_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/redistest/redisstoretest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// redisStore returns a Redis store on a redis-server of the test's own
// (redistest.Start: a free loopback port, stopped by its pid; skipped
// without redis-server unless REQUIRE_REDIS=1).
func redisStore(tb testing.TB) *redisstore.Store {
	tb.Helper()
	store, _ := redisstoretest.Open(tb, redistest.Start(tb).Addr, redisstore.Config{})
	return store
}
