package etcd_test

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/etcd"
	"github.com/sluicehq/sluice/etcd/internal/etcdtest"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/rulefile"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// fallback is the rule set given in code: one global rule of 7 a minute.
var fallback = rules.MustNew(rules.Rule{Name: "global", Key: keyfunc.Global(), Limit: sluice.PerMinute(7)})

// started is a watcher started with start's options, and what it reported.
type started struct {
	instance
	logs *lockedBuffer
	reg  *prometheus.Registry
}

// start starts a watcher of key with a registry and a log of its own,
// hooks feeding the instance's channels, and opts.
func start(t *testing.T, cli *clientv3.Client, opts ...etcd.Option) (*started, error) {
	t.Helper()
	s := &started{instance: instance{reloads: make(chan *rules.Set, 16), errs: make(chan error, 16)}, logs: new(lockedBuffer), reg: prometheus.NewRegistry()}
	opts = append([]etcd.Option{etcd.WithLogger(slog.New(slog.NewTextHandler(s.logs, nil))), etcd.WithRegisterer(s.reg),
		etcd.OnReload(func(set *rules.Set) { s.reloads <- set }), etcd.OnError(func(err error) { s.errs <- err })}, opts...)
	w, err := etcd.Watch(context.Background(), cli, key, rulefile.LoadConfig{}, opts...)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { w.Close() })
	s.w = w
	return s, nil
}

// mustStart is start that fails the test on an error.
func mustStart(t *testing.T, cli *clientv3.Client, opts ...etcd.Option) *started {
	t.Helper()
	s, err := start(t, cli, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// origin checks where s's rules come from: Origin, the gauge, and the
// rate of its rule.
func (s *started) origin(t *testing.T, want etcd.Origin, rate int64) {
	t.Helper()
	if got := s.w.Origin(); got != want {
		t.Errorf("Origin() = %v, want %v", got, want)
	}
	got := gather(t, s.reg)
	for _, o := range []etcd.Origin{etcd.OriginEtcd, etcd.OriginSnapshot, etcd.OriginFallback} {
		series := `sluice_etcd_rules_origin{key="` + key + `",origin="` + o.String() + `"}`
		if v, w := got[series], b2f(o == want); v != w {
			t.Errorf("%s = %v, want %v", series, v, w)
		}
	}
	if r := s.w.Current().Rules()[0].Limit.Rate; r != rate {
		t.Errorf("rate %d in force, want %d", r, rate)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// gather returns every series of reg's metrics, `name{label="value",...}`
// to value.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			out[mf.GetName()+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}

// snapshotErrors returns the count of snapshot errors of op in reg.
func snapshotErrors(t *testing.T, reg *prometheus.Registry, op string) float64 {
	t.Helper()
	return gather(t, reg)[`sluice_etcd_snapshot_errors_total{key="`+key+`",op="`+op+`"}`]
}

// saved writes a snapshot of doc("10") at a path of the test's own, as an
// instance that applied it would, and returns the path.
func saved(t *testing.T, srv *etcdtest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rules.snapshot")
	srv.Put(key, doc("10"))
	first := mustStart(t, srv.Client(), etcd.WithSnapshot(path))
	first.w.Close()
	if b, err := os.ReadFile(path); err != nil || string(b) != doc("10") {
		t.Fatalf("the first instance's snapshot: %q %v", b, err)
	}
	return path
}

// reloadTo waits for s to apply the rules of rate from etcd.
func (s *started) reloadTo(t *testing.T, rate int64, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case set := <-s.reloads:
			if set.Rules()[0].Limit.Rate == rate {
				return
			}
		case <-deadline:
			t.Fatalf("rate %d not applied within %v", rate, within)
		}
	}
}

// TestStartFromEtcd: a good document in etcd is what a watcher starts
// from, whatever the snapshot and the fallback rules hold, and it is saved
// as the snapshot.
func TestStartFromEtcd(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	path := filepath.Join(t.TempDir(), "rules.snapshot")
	if err := os.WriteFile(path, []byte(doc("99")), 0o600); err != nil {
		t.Fatal(err)
	}
	rev := srv.Put(key, doc("10"))
	s := mustStart(t, srv.Client(), etcd.WithSnapshot(path), etcd.WithFallback(fallback))
	s.origin(t, etcd.OriginEtcd, 10)
	if s.w.Revision() != rev || s.w.Err() != nil {
		t.Errorf("Revision() = %d (want %d), Err() = %v", s.w.Revision(), rev, s.w.Err())
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != doc("10") {
		t.Errorf("snapshot after the start: %q %v", b, err)
	}
	if logs := s.logs.String(); !strings.Contains(logs, `msg="sluice: rules loaded from etcd"`) || !strings.Contains(logs, "origin=etcd") {
		t.Errorf("the start's log line:\n%s", logs)
	}
}

// TestStartFromSnapshotThenEtcd: with a refused document in etcd, a new
// instance starts from the last good snapshot, says so (log, metric,
// Origin, Err, OnError), leaves the snapshot alone, and takes etcd's next
// good document.
func TestStartFromSnapshotThenEtcd(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	path := saved(t, srv)
	srv.Put(key, bad) // the bad write

	s := mustStart(t, srv.Client(), etcd.WithSnapshot(path), etcd.WithFallback(fallback))
	s.origin(t, etcd.OriginSnapshot, 10)
	const want = `rulefile: etcd:/sluice/rules.yaml:4: rule "global": limit.per`
	if err := s.w.Err(); !errors.Is(err, rulefile.ErrInvalidFile) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Err() = %v, want %q...", err, want)
	}
	if err := <-s.errs; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("OnError got %v", err)
	}
	if s.w.Revision() != 0 {
		t.Errorf("Revision() = %d from the snapshot, want 0", s.w.Revision())
	}
	logs := s.logs.String()
	for _, w := range []string{"level=WARN", `msg="sluice: no good rules in etcd; starting from the last good snapshot"`, "origin=snapshot", "snapshot=" + path, `limit.per: \"1fortnight\"`} {
		if !strings.Contains(logs, w) {
			t.Errorf("the start's log line lacks %s:\n%s", w, logs)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != doc("10") {
		t.Errorf("the snapshot changed to %q", b)
	}

	rev := srv.Put(key, doc("20"))
	s.reloadTo(t, 20, 10*time.Second)
	s.origin(t, etcd.OriginEtcd, 20)
	if s.w.Revision() != rev || s.w.Err() != nil {
		t.Errorf("after etcd's good document: Revision() = %d (want %d), Err() = %v", s.w.Revision(), rev, s.w.Err())
	}
	if b, _ := os.ReadFile(path); string(b) != doc("20") {
		t.Errorf("the snapshot after etcd's good document: %q", b)
	}
	if logs := s.logs.String(); !strings.Contains(logs, "replacing the snapshot rules") || !strings.Contains(logs, "replaced=snapshot") {
		t.Errorf("the switch is not logged:\n%s", logs)
	}
}

// TestStartFromFallbackThenEtcd: with a refused document in etcd and no
// usable snapshot (none yet, or one that is itself refused), a new instance
// starts from the fallback rules, reports the snapshot's error, and takes
// etcd's next good document.
func TestStartFromFallbackThenEtcd(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	srv.Put(key, bad)
	tests := []struct {
		name     string
		snapshot string // content; "" for none
		want     string // the snapshot's error, after its path
		is       error
	}{
		{"no snapshot", "", ": open: no such file or directory", fs.ErrNotExist},
		{"refused snapshot", "rules:\n  - name: g\n    key: global\n    limit: {rate: -1, per: 1m}\n", `:4: rule "g": limit.rate`, rulefile.ErrInvalidFile},
		{"no snapshot option", "-", "", nil},
	}
	for i, tt := range tests {
		path := filepath.Join(t.TempDir(), "rules.snapshot")
		opts := []etcd.Option{etcd.WithFallback(fallback), etcd.WithSnapshot(path)}
		switch tt.snapshot {
		case "-":
			opts = opts[:1]
		case "":
		default:
			if err := os.WriteFile(path, []byte(tt.snapshot), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		s := mustStart(t, srv.Client(), opts...)
		s.origin(t, etcd.OriginFallback, 7)
		if err := s.w.Err(); !errors.Is(err, rulefile.ErrInvalidFile) || !strings.Contains(err.Error(), "limit.per") {
			t.Errorf("%s: Err() = %v, want etcd's document's error", tt.name, err)
		}
		<-s.errs // etcd's document's error
		logs := s.logs.String()
		if !strings.Contains(logs, `msg="sluice: no good rules in etcd or a snapshot; starting from the fallback rules"`) || !strings.Contains(logs, "origin=fallback") {
			t.Errorf("%s: the start's log line:\n%s", tt.name, logs)
		}
		if tt.is != nil {
			err := <-s.errs
			if !errors.Is(err, tt.is) || !strings.HasPrefix(err.Error(), "rulefile: "+path+tt.want) {
				t.Errorf("%s: the snapshot's error %v, want %q wrapping %v", tt.name, err, "rulefile: "+path+tt.want, tt.is)
			}
			if !strings.Contains(logs, `msg="sluice: the last good snapshot cannot be used"`) || !strings.Contains(logs, "snapshot_error=") {
				t.Errorf("%s: the snapshot's error is not logged:\n%s", tt.name, logs)
			}
		}
		if got, want := snapshotErrors(t, s.reg, "read"), b2f(tt.is != nil); got != want {
			t.Errorf("%s: snapshot read errors %v, want %v", tt.name, got, want)
		}

		rate := int64(10 * (i + 1)) // a rate of its own per case
		srv.Put(key, doc(strconv.FormatInt(rate, 10)))
		s.reloadTo(t, rate, 10*time.Second)
		s.origin(t, etcd.OriginEtcd, rate)
		srv.Put(key, bad)
	}
}

// TestStartEtcdDownFromSnapshot: with etcd not answering, a new instance
// starts from the snapshot once the read timeout is over, and follows
// etcd when it answers again.
func TestStartEtcdDownFromSnapshot(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	path := saved(t, srv)
	cli := srv.Client()
	srv.Kill()

	begin := time.Now()
	s := mustStart(t, cli, etcd.WithSnapshot(path), etcd.WithReadTimeout(300*time.Millisecond))
	if took := time.Since(begin); took > 10*time.Second {
		t.Errorf("Watch took %v with etcd down and a read timeout of 300 ms", took)
	}
	s.origin(t, etcd.OriginSnapshot, 10)
	if err := s.w.Err(); err == nil || !strings.Contains(err.Error(), "reading the key from etcd") {
		t.Errorf("Err() = %v, want etcd's read error", err)
	}

	srv.Restart()
	srv.Put(key, doc("30"))
	s.reloadTo(t, 30, 30*time.Second)
	s.origin(t, etcd.OriginEtcd, 30)
	if b, _ := os.ReadFile(path); string(b) != doc("30") {
		t.Errorf("the snapshot after etcd returned: %q", b)
	}
}

// TestStartWithoutRules: with no good rules anywhere Watch fails, saying
// why for etcd and for the snapshot; without a snapshot or fallback rules,
// with etcd's error alone.
func TestStartWithoutRules(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	srv.Put(key, bad)
	dir := t.TempDir()
	refused := filepath.Join(dir, "refused.snapshot")
	if err := os.WriteFile(refused, []byte("rules: [}"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.snapshot")
	const etcdErr = `etcd: no good rules to start from: in etcd: rulefile: etcd:/sluice/rules.yaml:4: rule "global": limit.per: "1fortnight"`
	tests := []struct {
		name string
		opts []etcd.Option
		want []string
		is   []error
	}{
		{"no options", nil, []string{`rulefile: etcd:/sluice/rules.yaml:4: rule "global": limit.per`}, []error{rulefile.ErrInvalidFile}},
		{"missing snapshot", []etcd.Option{etcd.WithSnapshot(missing)},
			[]string{etcdErr, "; in the snapshot: rulefile: " + missing + ": open: no such file or directory"}, []error{rulefile.ErrInvalidFile, fs.ErrNotExist}},
		{"refused snapshot", []etcd.Option{etcd.WithSnapshot(refused)},
			[]string{etcdErr, "; in the snapshot: rulefile: " + refused + ": invalid YAML"}, []error{rulefile.ErrInvalidFile}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := start(t, srv.Client(), tt.opts...)
			if err == nil {
				t.Fatalf("started from %v", s.w.Origin())
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, is := range tt.is {
				if !errors.Is(err, is) {
					t.Errorf("error %q does not wrap %v", err, is)
				}
			}
		})
	}
}
