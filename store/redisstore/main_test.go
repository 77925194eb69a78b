package redisstore_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/leakcheck"
)

// TestMain fails the package if any goroutine outlives its test: the
// middleware, the stores, the Redis clients and the fault proxies must all
// stop what they start once they are closed.
func TestMain(m *testing.M) {
	leakcheck.Main(m)
}
