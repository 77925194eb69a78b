package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/etcd/internal/etcdtest"
)

const good = "rules:\n  - name: per-user\n    key: user\n    limit: {rate: 10, per: 1m}\n"

func file(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCheck: check accepts a valid file, refuses one with a mistake
// naming the file, the line, the rule and the field, and stands for the
// application's user finder with -user.
func TestCheck(t *testing.T) {
	var out bytes.Buffer
	p := file(t, good)
	if err := run(context.Background(), []string{"-user", "check", p}, &out, io.Discard); err != nil || out.String() != p+": 1 rules\n" {
		t.Errorf("check -user: %v %q", err, out.String())
	}
	err := run(context.Background(), []string{"check", p}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), p+`:3: rule "per-user": key: user`) {
		t.Errorf("check without -user: %v", err)
	}
	if err := run(context.Background(), []string{"frobnicate"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "usage:") {
		t.Errorf("unknown command: %v", err)
	}
}

// TestPutGetWatch: put checks and writes, refusing a bad file without
// writing it; get shows the document; watch reports each change.
func TestPutGetWatch(t *testing.T) {
	srv := etcdtest.Start(t)
	ep := []string{"-endpoints", srv.Addr, "-user"}
	var out bytes.Buffer
	if err := run(context.Background(), append(ep, "put", "/r.yaml", file(t, good)), &out, io.Discard); err != nil || !strings.Contains(out.String(), "/r.yaml: written at revision") {
		t.Fatalf("put: %v %q", err, out.String())
	}
	err := run(context.Background(), append(ep, "put", "/r.yaml", file(t, "rules: []\n")), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "rulefile: etcd:/r.yaml:1: rules: empty") {
		t.Errorf("put of a bad file: %v", err)
	}
	out.Reset()
	if err := run(context.Background(), append(ep, "get", "/r.yaml"), &out, io.Discard); err != nil || !strings.HasSuffix(out.String(), good) {
		t.Errorf("get: %v %q", err, out.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wout lockedBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, append(ep, "watch", "/r.yaml"), &wout, io.Discard) }()
	waitFor(t, &wout, "in force: 1 rules (per-user) at revision")
	srv.Put("/r.yaml", strings.Replace(good, "per-user", "per-account", 1))
	waitFor(t, &wout, "in force: 1 rules (per-account)")
	srv.Put("/r.yaml", "rules: 7\n")
	waitFor(t, &wout, "refused, the last good rules stay: rulefile: etcd:/r.yaml:1: rules:")
	cancel()
	if err := <-done; err != nil {
		t.Errorf("watch: %v", err)
	}
}

func waitFor(t *testing.T, b *lockedBuffer, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(b.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("output lacks %q:\n%s", s, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
