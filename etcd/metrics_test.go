package etcd_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice/etcd"
	"github.com/sluicehq/sluice/etcd/internal/etcdtest"
	"github.com/sluicehq/sluice/rules/rulefile"
)

// TestMetricsSharedRegistry: watchers of two keys register with one
// registry, each reporting under its own key, from the start.
func TestMetricsSharedRegistry(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	srv.Put("/a", doc("1"))
	reg := prometheus.NewRegistry()
	for _, k := range []string{"/a", "/b"} {
		w, err := etcd.Watch(context.Background(), srv.Client(), k, rulefile.LoadConfig{},
			etcd.WithRegisterer(reg), etcd.WithFallback(fallback), etcd.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
	}
	got := gather(t, reg)
	for series, want := range map[string]float64{
		`sluice_etcd_rules_origin{key="/a",origin="etcd"}`:       1,
		`sluice_etcd_rules_origin{key="/a",origin="snapshot"}`:   0,
		`sluice_etcd_rules_origin{key="/a",origin="fallback"}`:   0,
		`sluice_etcd_rules_origin{key="/b",origin="etcd"}`:       0,
		`sluice_etcd_rules_origin{key="/b",origin="snapshot"}`:   0,
		`sluice_etcd_rules_origin{key="/b",origin="fallback"}`:   1,
		`sluice_etcd_snapshot_errors_total{key="/a",op="read"}`:  0,
		`sluice_etcd_snapshot_errors_total{key="/a",op="write"}`: 0,
	} {
		if v, ok := got[series]; !ok || v != want {
			t.Errorf("%s = %v (present: %v), want %v", series, v, ok, want)
		}
	}
	if len(got) != 10 {
		t.Errorf("%d series, want 10: %v", len(got), got)
	}
}
