package redistest

import (
	"os"
	"testing"
)

// TestMain says, in one line, when the tests that need redis-server were
// skipped.
func TestMain(m *testing.M) { os.Exit(ReportSkips(m).Run()) }
