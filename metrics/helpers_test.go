package metrics_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/sluicehq/sluice/metrics"
)

// newCollector returns a collector of cfg registered with a new pedantic
// registry, which checks on every Gather that what Collect sends matches
// what Describe declared.
func newCollector(t testing.TB, cfg metrics.Config) (*metrics.Collector, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	cfg.Registerer = reg
	c, err := metrics.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, reg
}

// series gathers reg and returns every counter and gauge sample, and every
// histogram's count, keyed as in the text exposition:
// `name{label="value",...}` with labels sorted by name.
func series(t testing.TB, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := seriesKey(mf.GetName(), m.GetLabel())
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[seriesKey(mf.GetName()+"_count", m.GetLabel())] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func seriesKey(name string, labels []*dto.LabelPair) string {
	parts := make([]string, 0, len(labels))
	for _, l := range labels {
		parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	slices.Sort(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}

// family returns the named family gathered from reg, or nil.
func family(t testing.TB, reg prometheus.Gatherer, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	return nil
}

// labelValue returns the value of label name on m, or "".
func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// want checks that got holds each series of want with its value.
func want(t testing.TB, got map[string]float64, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("series %s missing", k)
		case g != v:
			t.Errorf("%s = %v, want %v", k, g, v)
		}
	}
}

func decisions(rule, outcome string) string {
	return fmt.Sprintf("sluice_decisions_total{outcome=%q,rule=%q}", outcome, rule)
}
