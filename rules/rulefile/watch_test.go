package rulefile_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/leakcheck"

	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/rulefile"
)

// ruleFile returns a one-rule file whose rule is named name.
func ruleFile(name string, rate int) string {
	return "rules:\n  - name: " + name + "\n    key: ip\n    limit: {rate: " + strconv.Itoa(rate) + ", per: 1m}\n"
}

// replace writes content to path atomically: a temporary file, then a
// rename over path.
func replace(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// hooks records what a watcher reports.
type hooks struct {
	mu       sync.Mutex
	reloads  []string // the first rule's name of each new set
	errs     []error
	reloaded chan struct{}
}

func newHooks() *hooks { return &hooks{reloaded: make(chan struct{}, 100)} }

func (h *hooks) config(log *slog.Logger) rulefile.WatchConfig {
	return rulefile.WatchConfig{
		Logger: log,
		OnReload: func(s *rules.Set) {
			h.mu.Lock()
			h.reloads = append(h.reloads, s.Rules()[0].Name)
			h.mu.Unlock()
			h.reloaded <- struct{}{}
		},
		OnError: func(err error) {
			h.mu.Lock()
			h.errs = append(h.errs, err)
			h.mu.Unlock()
		},
	}
}

func (h *hooks) counts() (reloads, errs int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.reloads), len(h.errs)
}

func current(w *rulefile.Watcher) string { return w.Current().Rules()[0].Name }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Atomic renames over the file, and bad files, stepped one poll at a time.
func TestWatcherSeesRenamesAndKeepsTheLastGoodRules(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	replace(t, path, ruleFile("first", 10))
	h := newHooks()
	var logs bytes.Buffer
	w, err := rulefile.WatchTicks(path, testConfig(), h.config(slog.New(slog.NewTextHandler(&logs, nil))), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	steps := []struct {
		name          string
		change        func()
		want          string
		reloads, errs int
	}{
		{"unchanged", func() {}, "first", 0, 0},
		{"same content rewritten", func() { replace(t, path, ruleFile("first", 10)) }, "first", 0, 0},
		{"renamed over", func() { replace(t, path, ruleFile("second", 10)) }, "second", 1, 0},
		{"invalid", func() { replace(t, path, ruleFile("third", 0)) }, "second", 1, 1},
		{"still invalid: reported once", func() {}, "second", 1, 1},
		{"removed", func() { os.Remove(path) }, "second", 1, 2},
		{"still removed: reported once", func() {}, "second", 1, 2},
		{"back, fixed", func() { replace(t, path, ruleFile("fourth", 10)) }, "fourth", 2, 2},
		{"edited in place", func() { os.WriteFile(path, []byte(ruleFile("fifth", 10)), 0o644) }, "fifth", 3, 2},
	}
	for _, s := range steps {
		s.change()
		w.Poll()
		reloads, errs := h.counts()
		if got := current(w); got != s.want || reloads != s.reloads || errs != s.errs {
			t.Fatalf("%s: rules %q, %d reloads, %d errors; want %q, %d, %d", s.name, got, reloads, errs, s.want, s.reloads, s.errs)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !errors.Is(h.errs[0], rulefile.ErrInvalidFile) || !strings.Contains(h.errs[0].Error(), `rules.yaml:4: rule "third": limit.rate: 0`) {
		t.Errorf("OnError got %v", h.errs[0])
	}
	if !errors.Is(h.errs[1], os.ErrNotExist) {
		t.Errorf("OnError got %v for a removed file", h.errs[1])
	}
	for _, want := range []string{`level=INFO msg="sluice: rules reloaded" file=` + path + ` rules=1`, `level=ERROR msg="sluice: rule file refused; keeping the last good rules"`, `limit.rate: 0: must be at least 1`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

// A Kubernetes ConfigMap volume: the file is a symlink through ..data,
// which the kubelet swaps atomically to a new timestamped directory.
func TestWatcherSeesConfigMapSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	write := func(version, content string) {
		if err := os.Mkdir(filepath.Join(dir, version), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, version, "rules.yaml"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	swap := func(version string) { // what the kubelet does
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(version, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	write("..2026_01_01_00_00_00.1", ruleFile("v1", 10))
	swap("..2026_01_01_00_00_00.1")
	path := filepath.Join(dir, "rules.yaml")
	if err := os.Symlink(filepath.Join("..data", "rules.yaml"), path); err != nil {
		t.Fatal(err)
	}
	h := newHooks()
	w, err := rulefile.WatchTicks(path, testConfig(), h.config(quiet()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	write("..2026_01_01_00_01_00.2", ruleFile("v2", 10))
	w.Poll()
	if got := current(w); got != "v1" {
		t.Fatalf("before the swap: %q", got)
	}
	swap("..2026_01_01_00_01_00.2")
	if err := os.RemoveAll(filepath.Join(dir, "..2026_01_01_00_00_00.1")); err != nil {
		t.Fatal(err)
	}
	w.Poll()
	if got := current(w); got != "v2" {
		t.Fatalf("after the swap: %q, want v2", got)
	}
}

// Reload is for callers that push the file themselves.
func TestWatcherReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	replace(t, path, ruleFile("first", 10))
	h := newHooks()
	w, err := rulefile.Watch(path, testConfig(), rulefile.WatchConfig{Interval: -1, Logger: quiet(), OnReload: h.config(nil).OnReload, OnError: h.config(nil).OnError})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Reload(); err != nil || current(w) != "first" {
		t.Fatalf("Reload of the same file: %v, %q", err, current(w))
	}
	replace(t, path, ruleFile("second", 10))
	if err := w.Reload(); err != nil || current(w) != "second" {
		t.Fatalf("Reload: %v, %q", err, current(w))
	}
	replace(t, path, "rules: [")
	if err := w.Reload(); !errors.Is(err, rulefile.ErrInvalidFile) || current(w) != "second" {
		t.Fatalf("Reload of a bad file: %v, %q", err, current(w))
	}
	if reloads, errs := h.counts(); reloads != 2 || errs != 1 {
		t.Fatalf("%d reloads, %d errors; want 2 and 1", reloads, errs)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil { // twice is fine
		t.Fatal(err)
	}
}

// The polling goroutine runs on its ticks and stops with Close.
func TestWatcherGoroutineStopsOnClose(t *testing.T) {
	defer leakcheck.Check(t)()
	path := filepath.Join(t.TempDir(), "rules.yaml")
	replace(t, path, ruleFile("first", 10))
	h := newHooks()
	tick := make(chan time.Time)
	w, err := rulefile.WatchTicks(path, testConfig(), h.config(quiet()), tick)
	if err != nil {
		t.Fatal(err)
	}
	replace(t, path, ruleFile("second", 10))
	tick <- time.Time{}
	<-h.reloaded
	if got := current(w); got != "second" {
		t.Fatalf("after a tick: %q", got)
	}
	w.Close()
	if got := current(w); got != "second" {
		t.Fatalf("after Close: %q", got)
	}
}

// The same with a real ticker: no sleeping, the test waits for the reload
// the first tick brings.
func TestWatchPollsOnItsOwn(t *testing.T) {
	defer leakcheck.Check(t)()
	path := filepath.Join(t.TempDir(), "rules.yaml")
	replace(t, path, ruleFile("first", 10))
	h := newHooks()
	cfg := h.config(quiet())
	cfg.Interval = time.Millisecond
	w, err := rulefile.Watch(path, testConfig(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	replace(t, path, ruleFile("second", 10))
	select {
	case <-h.reloaded:
	case <-time.After(10 * time.Second):
		t.Fatal("no reload within 10 s")
	}
	if got := current(w); got != "second" {
		t.Fatalf("%q", got)
	}
}

// A service must not start on rules it cannot read, nor leak the
// goroutine it would have started.
func TestWatchRefusesABadFile(t *testing.T) {
	defer leakcheck.Check(t)()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	replace(t, bad, ruleFile("x", 0))
	for _, path := range []string{bad, filepath.Join(dir, "missing.yaml")} {
		if w, err := rulefile.Watch(path, testConfig(), rulefile.WatchConfig{}); err == nil || w != nil || !errors.Is(err, rulefile.ErrInvalidFile) {
			t.Fatalf("%s: %v, %v", path, w, err)
		}
	}
}
