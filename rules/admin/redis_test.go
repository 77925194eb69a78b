package admin_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/redistest/redisstoretest"
)

// TestResetRestoresTheLimitOnRedis runs the reset scenario on a
// redis-server started for the test (on Redis time: nothing sleeps).
func TestResetRestoresTheLimitOnRedis(t *testing.T) {
	testResetRestoresTheLimit(t, newFixture(t, redisstoretest.New(t)))
}
