package metrics_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
	"github.com/sluicehq/sluice/store/lease"
)

var (
	_ lease.Observer       = (*metrics.LeaseCollector)(nil)
	_ lease.RefundObserver = (*metrics.LeaseCollector)(nil)
)

func TestLeaseCollector(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	c, err := metrics.NewLease(metrics.LeaseConfig{Registerer: reg, MaxRules: 2})
	if err != nil {
		t.Fatal(err)
	}
	c.LeaseRefilled("api", 25)
	c.LeaseRefilled("api", 10)
	c.LeaseReturned("api", 7)
	c.LeaseLost("ip", 3)
	c.RefundFailed("ip", 2)
	c.LeaseRefilled("third", 1) // past MaxRules: counted under OtherRule
	c.LeasedKeys(42)
	c.HotKey("api", true, "lease")
	c.HotKey("api", true, "lease")
	c.HotKey("api", false, "lease")
	want := `
# HELP sluice_lease_refills_total Calls to the shared store that took a local lease.
# TYPE sluice_lease_refills_total counter
sluice_lease_refills_total{rule="__other__"} 1
sluice_lease_refills_total{rule="api"} 2
# HELP sluice_lease_tokens_refilled_total Tokens taken by lease refills.
# TYPE sluice_lease_tokens_refilled_total counter
sluice_lease_tokens_refilled_total{rule="__other__"} 1
sluice_lease_tokens_refilled_total{rule="api"} 35
# HELP sluice_lease_tokens_returned_total Unused lease tokens given back to the shared store.
# TYPE sluice_lease_tokens_returned_total counter
sluice_lease_tokens_returned_total{rule="api"} 7
# HELP sluice_lease_tokens_lost_total Unused lease tokens that did not go back (window passed, refund failed, or refunded after the lease went back).
# TYPE sluice_lease_tokens_lost_total counter
sluice_lease_tokens_lost_total{rule="ip"} 3
# HELP sluice_lease_refund_failures_total Refunds the shared store failed to take, never retried.
# TYPE sluice_lease_refund_failures_total counter
sluice_lease_refund_failures_total{rule="ip"} 2
# HELP sluice_lease_keys Keys holding lease state.
# TYPE sluice_lease_keys gauge
sluice_lease_keys 42
# HELP sluice_hot_keys Keys hot right now.
# TYPE sluice_hot_keys gauge
sluice_hot_keys{rule="api"} 1
# HELP sluice_hot_key_transitions_total Keys turning hot or cooling, by how the rule handles them.
# TYPE sluice_hot_key_transitions_total counter
sluice_hot_key_transitions_total{handling="lease",rule="api",to="cold"} 1
sluice_hot_key_transitions_total{handling="lease",rule="api",to="hot"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []metrics.LeaseConfig{
		{Namespace: "bad-name"},
		{ConstLabels: prometheus.Labels{"rule": "x"}},
		{ConstLabels: prometheus.Labels{"handling": "x"}},
		{ConstLabels: prometheus.Labels{"__name": "x"}},
		{ConstLabels: prometheus.Labels{"limiter": "bad\xff"}},
	} {
		if c, err := metrics.NewLease(cfg); c != nil || !errors.Is(err, sluice.ErrInvalidConfig) {
			t.Errorf("%+v: %v, want an error wrapping ErrInvalidConfig", cfg, err)
		}
	}
}

// TestLeaseCollectorRulesConcurrently meets rule names from many
// goroutines at once (run with -race): every event is counted, under its
// own rule up to the cap and under OtherRule past it.
func TestLeaseCollectorRulesConcurrently(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	c := metrics.MustNewLease(metrics.LeaseConfig{Registerer: reg, MaxRules: 4})
	const goroutines, names, rounds = 8, 16, 50
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range rounds {
				c.LeaseRefilled(fmt.Sprintf("rule-%d", (g+i)%names), 1)
			}
		})
	}
	wg.Wait()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	var total float64
	for _, mf := range mfs {
		if mf.GetName() != "sluice_lease_refills_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels = append(labels, m.GetLabel()[0].GetValue())
			total += m.GetCounter().GetValue()
		}
	}
	if total != goroutines*rounds || len(labels) != 5 || !slices.Contains(labels, metrics.OtherRule) {
		t.Fatalf("refills %v under %v; want %d under 4 rules and %q", total, labels, goroutines*rounds, metrics.OtherRule)
	}
}

func TestMustNew(t *testing.T) {
	if metrics.MustNew(metrics.Config{}) == nil || metrics.MustNewLease(metrics.LeaseConfig{}) == nil {
		t.Fatal("MustNew with the zero Config: nil collector")
	}
	for name, f := range map[string]func(){
		"MustNew":      func() { metrics.MustNew(metrics.Config{Namespace: "bad-name"}) },
		"MustNewLease": func() { metrics.MustNewLease(metrics.LeaseConfig{Namespace: "bad-name"}) },
	} {
		func() {
			defer func() {
				if err, _ := recover().(error); !errors.Is(err, sluice.ErrInvalidConfig) {
					t.Errorf("%s with a bad namespace panicked with %v, want an error wrapping ErrInvalidConfig", name, err)
				}
			}()
			f()
		}()
	}
}
