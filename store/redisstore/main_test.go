package redisstore_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/leakcheck"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/redistest/redisstoretest"
)

// TestMain fails the package if any goroutine outlives its test: the
// middleware, the stores, the Redis clients and the fault proxies must all
// stop what they start once they are closed. Without redis-server it says,
// in one line, that the tests needing it were skipped. go-redis's own
// logging is discarded (SLUICE_REDIS_LOG=1 keeps it).
func TestMain(m *testing.M) {
	leakcheck.Main(redisstoretest.Quiet(redistest.ReportSkips(m)))
}
