package redistest

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
)

// skipped counts the tests of this test binary that Binary skipped.
var skipped atomic.Int64

// countSkip counts t's skip if t is one of the test binary's own tests
// (not a stand-in that records the skip).
func countSkip(t testing.TB) {
	switch t.(type) {
	case *testing.T, *testing.B, *testing.F:
		skipped.Add(1)
	}
}

// TestingM is what a TestMain runs: [*testing.M], or a wrapper of it.
type TestingM interface {
	Run() int
}

// ReportSkips wraps m so that, once its tests have run, a package whose
// tests needing redis-server were skipped says so in one line: a run
// without redis-server is otherwise all "ok". Use it in TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(redistest.ReportSkips(m).Run()) }
//
// The line goes to standard output, which go test shows with -v, with
// -json, and for a failing package; since it hides a passing package's
// output otherwise, the line also goes to the terminal (/dev/tty) when
// there is one. Under REQUIRE_REDIS=1 those tests fail instead, and there
// is nothing to report.
func ReportSkips(m TestingM) TestingM { return reporter{m} }

type reporter struct{ m TestingM }

func (r reporter) Run() int {
	code := r.m.Run()
	if n := skipped.Load(); n > 0 {
		report(os.Stdout, n)
	}
	return code
}

// report writes the line about n skipped tests to w and, unless go test
// shows w already, to the terminal.
func report(w io.Writer, n int64) {
	line := skipLine(n)
	_, _ = io.WriteString(w, line)
	if testing.Verbose() {
		return
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		_, _ = io.WriteString(tty, line)
		tty.Close()
	}
}

// skipLine says that n tests of the package under test were skipped for
// want of redis-server, and what to do.
func skipLine(n int64) string {
	return fmt.Sprintf("SKIPPED: %d %s of %s %s redis-server, which is not installed. "+
		"Install it (apt-get install redis-server) to run them; REQUIRE_REDIS=1 (as .ci/run sets) makes them fail instead.\n",
		n, plural(n, "test", "tests"), testedPackage(), plural(n, "needs", "need"))
}

// testedPackage returns the import path of the package under test: a test
// binary's main module path is the package's with ".test" added.
func testedPackage() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Path != "" {
		return strings.TrimSuffix(bi.Path, ".test")
	}
	return strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
