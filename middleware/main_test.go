package middleware_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives its test: the
// middleware, the stores, the Redis clients and the fault proxies must all
// stop what they start once they are closed. Without redis-server it says,
// in one line, that the tests needing it were skipped.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(redistest.ReportSkips(m))
}
