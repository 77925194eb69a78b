package admin_test

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/redistest/redisstoretest"
)

// TestMain says, in one line, when the tests that need redis-server were
// skipped, and discards go-redis's own logging (SLUICE_REDIS_LOG=1 keeps
// it), so the output shows the tests.
func TestMain(m *testing.M) { os.Exit(redisstoretest.Quiet(redistest.ReportSkips(m)).Run()) }
