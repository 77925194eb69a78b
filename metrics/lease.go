package metrics

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice/internal/obs"
)

// LeaseConfig configures a [LeaseCollector]. Its zero value is ready to
// use.
type LeaseConfig struct {
	// Namespace prefixes every metric name. Default: [DefaultNamespace].
	Namespace string
	// ConstLabels are added to every series, as in [Config].
	ConstLabels prometheus.Labels
	// MaxRules caps the distinct rule label values; events of further
	// rules are counted under [OtherRule]. Zero means [DefaultMaxRules];
	// negative, no cap.
	MaxRules int
	// Registerer, if not nil, is where [NewLease] registers the collector.
	Registerer prometheus.Registerer
}

// LeaseCollector exports what a lease store (store/lease) does: refills
// (the leading indicator of its load on the shared store), tokens given
// back and lost, keys holding leases, and hot keys. It implements
// [prometheus.Collector] and the lease store's Observer; give it to the
// store as lease.Config.Observer. Create it with [NewLease]. It is safe
// for concurrent use.
//
// With the default namespace "sluice":
//
//	sluice_lease_refills_total{rule}              counter
//	    Refills: calls to the shared store that took a lease.
//	sluice_lease_tokens_refilled_total{rule}      counter
//	    Tokens those refills took.
//	sluice_lease_tokens_returned_total{rule}      counter
//	    Unused tokens given back (on expiry or Close).
//	sluice_lease_tokens_lost_total{rule}          counter
//	    Unused tokens that did not go back: their window had passed, the
//	    refund failed (never retried), or a refund of a hit served from a
//	    lease came after the lease went back.
//	sluice_lease_refund_failures_total{rule}      counter
//	    Refunds the shared store failed to take (returns of unused tokens
//	    and refunds passed through), counted once, never retried.
//	sluice_lease_keys                             gauge
//	    Keys holding lease state, after each sweep.
//	sluice_hot_keys{rule}                         gauge
//	    Keys hot right now.
//	sluice_hot_key_transitions_total{rule, handling, to}  counter
//	    Keys turning hot (to="hot") and cooling (to="cold"); handling is
//	    "lease", "split", "lease+split" or "none".
type LeaseCollector struct {
	refills, refilled, returned, lost *prometheus.CounterVec
	refundFailures                    *prometheus.CounterVec
	keys                              prometheus.Gauge
	hot                               *prometheus.GaugeVec
	transitions                       *prometheus.CounterVec
	// parts are the metrics above, in the order Describe and Collect
	// visit them.
	parts []prometheus.Collector

	// labels maps the rule names met so far to their label: the name
	// itself (as valid UTF-8), or OtherRule past the cap. An event of a
	// known rule takes no lock.
	labels *obs.Names[string]
}

// leaseLabels are the label names of a [LeaseCollector]'s metrics, which
// no constant label may take.
var leaseLabels = []string{"rule", "handling", "to"}

// withDefaults returns cfg with its zero fields set to their defaults.
func (cfg LeaseConfig) withDefaults() LeaseConfig {
	cfg.Namespace = cmp.Or(cfg.Namespace, DefaultNamespace)
	cfg.MaxRules = cmp.Or(cfg.MaxRules, DefaultMaxRules)
	return cfg
}

// NewLease returns a lease collector configured by cfg. It fails on an
// invalid namespace or constant label (an error wrapping
// [sluice.ErrInvalidConfig]) and, if cfg.Registerer is set, when registration
// fails.
func NewLease(cfg LeaseConfig) (*LeaseCollector, error) {
	cfg = cfg.withDefaults()
	if err := validateNames(cfg.Namespace, cfg.ConstLabels, leaseLabels); err != nil {
		return nil, err
	}
	ns := cfg.Namespace
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help, ConstLabels: cfg.ConstLabels}, labels)
	}
	c := &LeaseCollector{
		refills:        counter("lease_refills_total", "Calls to the shared store that took a local lease.", "rule"),
		refilled:       counter("lease_tokens_refilled_total", "Tokens taken by lease refills.", "rule"),
		returned:       counter("lease_tokens_returned_total", "Unused lease tokens given back to the shared store.", "rule"),
		lost:           counter("lease_tokens_lost_total", "Unused lease tokens that did not go back (window passed, refund failed, or refunded after the lease went back).", "rule"),
		refundFailures: counter("lease_refund_failures_total", "Refunds the shared store failed to take, never retried.", "rule"),
		keys: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "lease_keys",
			Help: "Keys holding lease state.", ConstLabels: cfg.ConstLabels}),
		hot: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "hot_keys",
			Help: "Keys hot right now.", ConstLabels: cfg.ConstLabels}, []string{"rule"}),
		transitions: counter("hot_key_transitions_total", "Keys turning hot or cooling, by how the rule handles them.", "rule", "handling", "to"),
		labels:      obs.NewNames(cfg.MaxRules, OtherRule, validLabel),
	}
	c.parts = []prometheus.Collector{c.refills, c.refilled, c.returned, c.lost, c.refundFailures, c.keys, c.hot, c.transitions}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	return c, nil
}

// MustNewLease is like [NewLease] but panics on an error; for a
// configuration fixed in code.
func MustNewLease(cfg LeaseConfig) *LeaseCollector {
	c, err := NewLease(cfg)
	if err != nil {
		panic(err)
	}
	return c
}

// rule returns the label for rule name: itself, or OtherRule past the cap.
func (c *LeaseCollector) rule(name string) string { return c.labels.Get(name) }

// validLabel is name as a label value: valid UTF-8, which the client
// library requires.
func validLabel(name string) string { return strings.ToValidUTF8(name, "\uFFFD") }

// Describe implements [prometheus.Collector].
func (c *LeaseCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.parts {
		m.Describe(ch)
	}
}

// Collect implements [prometheus.Collector].
func (c *LeaseCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.parts {
		m.Collect(ch)
	}
}

// LeaseRefilled counts a refill that took taken tokens.
func (c *LeaseCollector) LeaseRefilled(rule string, taken int64) {
	r := c.rule(rule)
	c.refills.WithLabelValues(r).Inc()
	c.refilled.WithLabelValues(r).Add(float64(taken))
}

// LeaseReturned counts unused tokens given back.
func (c *LeaseCollector) LeaseReturned(rule string, units int64) {
	c.returned.WithLabelValues(c.rule(rule)).Add(float64(units))
}

// LeaseLost counts unused tokens that did not go back.
func (c *LeaseCollector) LeaseLost(rule string, units int64) {
	c.lost.WithLabelValues(c.rule(rule)).Add(float64(units))
}

// RefundFailed counts refunds the shared store failed to take.
func (c *LeaseCollector) RefundFailed(rule string, refunds int) {
	c.refundFailures.WithLabelValues(c.rule(rule)).Add(float64(refunds))
}

// LeasedKeys sets the number of keys holding lease state.
func (c *LeaseCollector) LeasedKeys(n int) { c.keys.Set(float64(n)) }

// HotKey counts a key turning hot or cooling and keeps the gauge of hot
// keys.
func (c *LeaseCollector) HotKey(rule string, hot bool, handling string) {
	r := c.rule(rule)
	to := "cold"
	if hot {
		to = "hot"
		c.hot.WithLabelValues(r).Inc()
	} else {
		c.hot.WithLabelValues(r).Dec()
	}
	c.transitions.WithLabelValues(r, handling, to).Inc()
}
