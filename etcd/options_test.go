package etcd_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/etcd"
	"github.com/sluicehq/sluice/etcd/internal/etcdtest"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/rulefile"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestWatchStart: Watch refuses to start without rules: a missing key, a
// bad document, etcd not answering, and invalid arguments.
func TestWatchStart(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	cli := srv.Client()
	srv.Put("/bad.json", `{"rules": [{"name": "x", "key": "global", "limit": {"rate": 0, "per": "1s"}}]}`)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	taken := prometheus.NewRegistry()
	taken.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_etcd_rules_origin", Help: "another metric of the name"}))
	tests := []struct {
		name string
		cli  *clientv3.Client
		key  string
		opts []etcd.Option
		want string
		is   error
	}{
		{"missing key", cli, "/nothing", nil, "rulefile: etcd:/nothing: etcd: the key holds no rules", etcd.ErrNoRules},
		{"bad JSON document", cli, "/bad.json", nil, `rulefile: etcd:/bad.json:1: rule "x": limit.rate`, rulefile.ErrInvalidFile},
		{"nil client", nil, key, nil, "etcd: Watch: nil client", sluice.ErrInvalidConfig},
		{"empty key", cli, "", nil, "etcd: Watch: empty key", sluice.ErrInvalidConfig},
		{"nil option", cli, key, []etcd.Option{nil}, "etcd: nil Option", sluice.ErrInvalidConfig},
		{"empty name", cli, key, []etcd.Option{etcd.WithName("")}, "etcd: WithName: empty name", sluice.ErrInvalidConfig},
		{"nil logger", cli, key, []etcd.Option{etcd.WithLogger(nil)}, "etcd: WithLogger: nil logger", sluice.ErrInvalidConfig},
		{"nil hook", cli, key, []etcd.Option{etcd.OnReload(nil)}, "etcd: OnReload: nil func", sluice.ErrInvalidConfig},
		{"nil error hook", cli, key, []etcd.Option{etcd.OnError(nil)}, "etcd: OnError: nil func", sluice.ErrInvalidConfig},
		{"read timeout", cli, key, []etcd.Option{etcd.WithReadTimeout(-1)}, "etcd: WithReadTimeout: -1ns: must be positive", sluice.ErrInvalidConfig},
		{"empty snapshot path", cli, key, []etcd.Option{etcd.WithSnapshot("")}, "etcd: WithSnapshot: empty path", sluice.ErrInvalidConfig},
		{"snapshot is a directory", cli, key, []etcd.Option{etcd.WithSnapshot(dir)}, "etcd: WithSnapshot: " + dir + " is a directory", sluice.ErrInvalidConfig},
		{"snapshot's directory missing", cli, key, []etcd.Option{etcd.WithSnapshot(filepath.Join(dir, "none", "s"))},
			"etcd: WithSnapshot: the directory of " + filepath.Join(dir, "none", "s") + ": stat: no such file or directory", sluice.ErrInvalidConfig},
		{"snapshot's directory a file", cli, key, []etcd.Option{etcd.WithSnapshot(filepath.Join(file, "s"))},
			"etcd: WithSnapshot: the directory of " + filepath.Join(file, "s") + ": " + file + " is not a directory", sluice.ErrInvalidConfig},
		{"nil fallback", cli, key, []etcd.Option{etcd.WithFallback(nil)}, "etcd: WithFallback: nil Set", sluice.ErrInvalidConfig},
		{"empty fallback", cli, key, []etcd.Option{etcd.WithFallback(&rules.Set{})}, "etcd: WithFallback: a Set without rules", sluice.ErrInvalidConfig},
		{"nil registerer", cli, key, []etcd.Option{etcd.WithRegisterer(nil)}, "etcd: WithRegisterer: nil registerer", sluice.ErrInvalidConfig},
		{"registry taken", cli, key, []etcd.Option{etcd.WithRegisterer(taken)}, "etcd: WithRegisterer: ", sluice.ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := etcd.Watch(context.Background(), tt.cli, tt.key, rulefile.LoadConfig{}, tt.opts...)
			if err == nil {
				w.Close()
				t.Fatal("started")
			}
			if !strings.HasPrefix(err.Error(), tt.want) || !errors.Is(err, tt.is) {
				t.Errorf("got %v, want %q wrapping %v", err, tt.want, tt.is)
			}
		})
	}
	// A LoadConfig no document could be parsed with is an error, not a
	// start from the fallback rules.
	_, err := etcd.Watch(context.Background(), cli, "/nothing", rulefile.LoadConfig{APIKeyHeader: "no header"}, etcd.WithFallback(fallback), etcd.WithLogger(quiet))
	if err == nil || !strings.HasPrefix(err.Error(), "rulefile: LoadConfig.APIKeyHeader") {
		t.Errorf("with an invalid LoadConfig and fallback rules: %v", err)
	}
	srv.Kill()
	_, err = etcd.Watch(context.Background(), cli, key, rulefile.LoadConfig{}, etcd.WithReadTimeout(300*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "reading the key from etcd") {
		t.Errorf("with etcd down: %v", err)
	}
}
