package redistest

import (
	"strings"
	"testing"
)

type fakeM struct {
	code int
	skip int
}

func (m fakeM) Run() int {
	skipped.Add(int64(m.skip))
	return m.code
}

// TestReportSkips: the wrapper passes the tests' exit code through, and the
// line names the package and the number of tests, and says what to do.
func TestReportSkips(t *testing.T) {
	before := skipped.Swap(0)
	defer skipped.Store(before) // the fake's run is not this package's
	if code := ReportSkips(fakeM{code: 3}).Run(); code != 3 {
		t.Errorf("Run = %d, want the tests' 3", code)
	}
	line := skipLine(2)
	for _, want := range []string{"SKIPPED: 2 tests of github.com/sluicehq/sluice/internal/redistest", "redis-server", "REQUIRE_REDIS=1"} {
		if !strings.Contains(line, want) {
			t.Errorf("%q does not say %q", line, want)
		}
	}
	if !strings.HasSuffix(line, ".\n") || strings.Count(line, "\n") != 1 {
		t.Errorf("%q is not one line", line)
	}
	if line := skipLine(1); !strings.Contains(line, "1 test of ") || !strings.Contains(line, "redistest needs redis-server") {
		t.Errorf("%q", line)
	}
}

// TestCountsOnlyRealTests: a stand-in testing.TB that records a skip (as
// TestNoBinary's does) is not counted as a skipped test of the package.
func TestCountsOnlyRealTests(t *testing.T) {
	before := skipped.Load()
	countSkip(&recorder{TB: t})
	if skipped.Load() != before {
		t.Fatal("a recorded skip was counted")
	}
}
