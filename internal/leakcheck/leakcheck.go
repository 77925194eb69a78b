// Package leakcheck fails tests that leave goroutines running: the
// stores, the middleware, the Redis clients and the fault proxies must stop
// what they start once they are closed.
//
// It compares goroutine dumps (runtime.Stack). A goroutine that is still
// exiting when a test ends is given time to finish: the check looks again,
// with growing pauses, for up to [Wait], before it reports.
package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// Wait bounds how long a check waits for goroutines to exit before it
// reports them.
const Wait = 5 * time.Second

// Main runs the tests of m (a [*testing.M], or a wrapper of one), then
// fails the package if any goroutine other than the test runtime's own is
// still running. Call it from TestMain:
//
//	func TestMain(m *testing.M) { leakcheck.Main(m) }
func Main(m interface{ Run() int }) {
	code := m.Run()
	if code == 0 {
		if leaked := settle(nil, Wait); len(leaked) > 0 {
			fmt.Fprintf(os.Stderr, "leakcheck: %d goroutine(s) outlived the tests:\n\n%s\n", len(leaked), strings.Join(leaked, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// Check records the goroutines running now and returns a function that
// fails t if any other goroutine is still running when it is called:
//
//	defer leakcheck.Check(t)()
func Check(t testing.TB) func() {
	t.Helper()
	return check(t, Wait)
}

func check(t testing.TB, wait time.Duration) func() {
	before := ids(dump())
	return func() {
		t.Helper()
		if leaked := settle(before, wait); len(leaked) > 0 {
			t.Errorf("leakcheck: %d goroutine(s) outlived the test:\n\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
	}
}

// settle returns the goroutines that are neither in before nor the test
// runtime's own, once none are left or wait has passed.
func settle(before map[string]bool, wait time.Duration) []string {
	deadline := time.Now().Add(wait)
	pause := time.Millisecond
	for {
		leaked := extra(dump(), before)
		if len(leaked) == 0 || time.Now().After(deadline) {
			return leaked
		}
		runtime.Gosched()
		time.Sleep(pause) // goroutines that are exiting need real time
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// dump returns the stack of every goroutine but the calling one.
func dump() []string {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	stacks := strings.Split(strings.TrimSpace(string(buf)), "\n\n")
	return stacks[1:] // the first is the calling goroutine
}

// ids returns the goroutine ids ("goroutine 7") of stacks.
func ids(stacks []string) map[string]bool {
	m := make(map[string]bool, len(stacks))
	for _, s := range stacks {
		m[id(s)] = true
	}
	return m
}

func id(stack string) string {
	head, _, _ := strings.Cut(stack, " [")
	return head
}

// extra returns the stacks that are not in before and not the runtime's or
// the testing package's own.
func extra(stacks []string, before map[string]bool) []string {
	var out []string
	for _, s := range stacks {
		if !before[id(s)] && !system(s) {
			out = append(out, s)
		}
	}
	return out
}

// systemFuncs start or park the goroutines that the Go runtime and the
// testing package run in every test binary.
var systemFuncs = []string{
	"testing.tRunner(",
	"testing.(*T).Run(",
	"testing.(*T).Parallel(",
	"testing.(*F).Fuzz(",
	"testing.runFuzzTests(",
	"testing.(*M).startAlarm",
	"testing.(*M).Run(",
	"os/signal.signal_recv(",
	"os/signal.loop(",
	"runtime.ensureSigM(",
	"runtime.goexit0(",
	"runtime/trace.Start",
}

func system(stack string) bool {
	return slices.ContainsFunc(systemFuncs, func(f string) bool { return strings.Contains(stack, f) })
}
