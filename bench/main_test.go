package bench

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/redistest/redisstoretest"
)

// TestMain says, in one line, when the tests that need redis-server were
// skipped.
func TestMain(m *testing.M) { os.Exit(redisstoretest.Quiet(redistest.ReportSkips(m)).Run()) }
