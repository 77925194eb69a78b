package admin_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/redistest/redisstoretest"
)

// TestResetRestoresTheLimitOnRedis runs the reset scenario on a
// redis-server started for the test (on Redis time: nothing sleeps).
func TestResetRestoresTheLimitOnRedis(t *testing.T) {
	t.Parallel()
	testResetRestoresTheLimit(t, newFixture(t, redisstoretest.New(t)))
}

// TestResetByEveryKeyKindOnRedis runs the per-kind reset scenarios on a
// redis-server started for the test, whose store remembers the buckets
// it refused: a reset must reach them too.
func TestResetByEveryKeyKindOnRedis(t *testing.T) {
	t.Parallel()
	testResetByEveryKeyKind(t, redisstoretest.New(t))
}
