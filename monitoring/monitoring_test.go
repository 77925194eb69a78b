// Package monitoring_test checks the Grafana dashboard and the Prometheus
// alerting rules shipped beside it: every expression parses, and names only
// metrics that sluice's metrics package exports.
package monitoring_test

import (
	"encoding/json"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/sluicehq/sluice/metrics"
)

// exported returns the metric names sluice's collectors export by default
// (metrics.Collector and metrics.LeaseCollector), with a histogram's
// _bucket, _sum and _count series, and the name of each metric family.
func exported(t *testing.T) (series map[string]bool, families []string) {
	t.Helper()
	c, err := metrics.New(metrics.Config{})
	if err != nil {
		t.Fatal(err)
	}
	lc, err := metrics.NewLease(metrics.LeaseConfig{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	for _, c := range []prometheus.Collector{c, lc} {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); lc.Describe(ch); close(ch) }()
	fq := regexp.MustCompile(`fqName: "([a-zA-Z_:][a-zA-Z0-9_:]*)"`)
	series = map[string]bool{}
	for d := range ch {
		m := fq.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		families = append(families, m[1])
		series[m[1]] = true
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			series[m[1]+s] = true
		}
	}
	if len(families) == 0 {
		t.Fatal("the collector describes no metrics")
	}
	return series, families
}

// names returns the metric names an expression selects.
func names(t *testing.T, expr string) []string {
	t.Helper()
	e, err := promql.ParseExpr(expr)
	if err != nil {
		t.Fatalf("%q does not parse: %v", expr, err)
	}
	var out []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			if vs.Name == "" {
				t.Errorf("%q selects series without a metric name", expr)
			}
			out = append(out, vs.Name)
		}
		return nil
	})
	if len(out) == 0 {
		t.Errorf("%q selects no metric", expr)
	}
	return out
}

// grafanaVars stands in for the dashboard's template variables, so that an
// expression can be parsed as Prometheus will see it.
var promql = parser.NewParser(parser.Options{})

var grafanaVars = strings.NewReplacer("$__rate_interval", "1m", "$__interval", "1m", "$job", ".*")

func TestAlertRules(t *testing.T) {
	series, _ := exported(t)
	groups, errs := rulefmt.ParseFile("alerts.yaml", false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Error(err)
	}
	n := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			n++
			if r.Alert == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %q: needs an alert name and a summary", r.Expr)
			}
			for _, name := range names(t, r.Expr) {
				if !series[name] {
					t.Errorf("alert %s: %s is not a metric sluice exports", r.Alert, name)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("alerts.yaml holds no rules")
	}
}

func TestDashboard(t *testing.T) {
	series, families := exported(t)
	raw, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			for _, name := range names(t, grafanaVars.Replace(q.Expr)) {
				if !series[name] {
					t.Errorf("panel %q: %s is not a metric sluice exports", p.Title, name)
				}
				used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")] = true
			}
		}
	}
	// Every metric sluice exports has a panel: a new metric is not left off the dashboard.
	slices.Sort(families)
	for _, f := range families {
		if !used[f] {
			t.Errorf("no panel shows %s", f)
		}
	}
}
