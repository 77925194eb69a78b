package bench

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestMain says, in one line, when the tests that need redis-server were
// skipped.
func TestMain(m *testing.M) { os.Exit(redistest.ReportSkips(m).Run()) }
