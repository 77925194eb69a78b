package redistest

import (
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// DebugArgs returns the command-line arguments that let a local client run
// DEBUG on the installed redis-server: "--enable-debug-command local" from
// Redis 7.0, which refuses DEBUG by default, and nothing before it (Redis
// 6.0 allows DEBUG and does not know the option, so passing it would stop
// the server from starting).
func DebugArgs(t testing.TB) []string {
	t.Helper()
	major, err := majorVersion(Binary(t))
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if major < 7 {
		return nil
	}
	return []string{"--enable-debug-command", "local"}
}

var versionField = regexp.MustCompile(`v=(\d+)\.`)

// majorVersion returns the major version of the redis-server at bin.
func majorVersion(bin string) (int, error) {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return 0, err
	}
	m := versionField.FindSubmatch(out)
	if m == nil {
		return 0, &exec.Error{Name: bin, Err: strconv.ErrSyntax}
	}
	return strconv.Atoi(string(m[1]))
}
