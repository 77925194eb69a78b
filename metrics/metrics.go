package metrics

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/obs"
)

// OtherRule is the rule label under which a [Collector] counts the
// decisions of rule names beyond its [Config.MaxRules].
const OtherRule = "__other__"

// DefaultMaxRules is the number of distinct rule labels a collector keeps
// when [Config.MaxRules] is zero.
const DefaultMaxRules = 1000

// DefaultNamespace prefixes every metric name when [Config.Namespace] is
// empty.
const DefaultNamespace = "sluice"

// DefaultBuckets returns the default upper bounds, in seconds, of the store
// call latency histogram: 50 µs to 1 s in 1-2.5-5 steps. They include the
// default latency budget (50 ms) as a bound, so calls that ran into the
// budget show in the buckets above it. Each call returns a new slice.
func DefaultBuckets() []float64 { return obs.DefaultBuckets() }

// Config configures a [Collector]. Its zero value is ready to use.
type Config struct {
	// Namespace prefixes every metric name ("<namespace>_decisions_total").
	// Default: [DefaultNamespace], "sluice".
	Namespace string
	// ConstLabels are added to every series, to tell apart the
	// collectors of several limiters registered with one registry, such
	// as {"limiter": "api"}. Collectors sharing a registry must all have
	// the same constant label names (with different values). They must
	// not be a label of the metrics (rule, outcome, ...). Default: none.
	ConstLabels prometheus.Labels
	// Buckets are the upper bounds, in seconds, of the store call latency
	// histogram, strictly increasing. Default (nil): [DefaultBuckets].
	// An empty, non-nil slice is an error.
	Buckets []float64
	// MaxRules caps the number of distinct rule names used as label
	// values; decisions of further names are counted under [OtherRule].
	// Zero means [DefaultMaxRules]; a negative value means no cap. The
	// collector copies its table of names each time it meets a new one,
	// a cost that is paid once per name but grows with the number of
	// names: keep the cap unless rule names are known to be bounded.
	MaxRules int
	// Registerer, if not nil, is where [New] registers the collector.
	// Default: nil, the caller registers it.
	Registerer prometheus.Registerer
}

// Collector records sluice's decisions, store calls and store events as
// Prometheus metrics (see the package documentation for the list).
//
// It implements [prometheus.Collector], [sluice.Observer],
// [sluice.StoreCallObserver], [sluice.ResetObserver],
// [sluice.RequestLimitObserver], [sluice.StoreEvents],
// [sluice.BreakerStartedEvents], [sluice.StateHealedEvents] and
// [sluice.EvictionPolicyEvents]. Create it with [New].
// It is safe for concurrent use.
type Collector struct {
	decisions   *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	storeErrors *prometheus.CounterVec
	breaker     *prometheus.GaugeVec
	transitions *prometheus.CounterVec
	reloads     *prometheus.CounterVec
	healed      *prometheus.CounterVec
	evicting    *prometheus.GaugeVec
	evictions   prometheus.Counter
	resets      *prometheus.CounterVec
	remembered  *prometheus.CounterVec
	penalties   *prometheus.CounterVec
	reqLimits   *prometheus.CounterVec
	// parts are the metrics above, in the order Describe and Collect
	// visit them.
	parts []prometheus.Collector

	// rules holds the counters of each rule name, up to the cap; the
	// hot path reads it without locking.
	rules *obs.Names[*outcomeCounters]

	latencyOK, latencyErr prometheus.Observer
	errCounters           [obs.NumKinds][2]prometheus.Counter // [kind][ambiguous]
}

// outcomeCounters holds a rule label's counter for each known outcome,
// indexed by sluice.Outcome.
type outcomeCounters struct {
	label      string
	counters   []prometheus.Counter
	remembered prometheus.Counter   // denials a store answered from memory
	penalties  prometheus.Counter   // blocks a rule's penalty started
	reqLimits  []prometheus.Counter // request-set limits capped or ignored, by action
}

// New returns a collector configured by cfg. It fails on an invalid
// configuration (a bad namespace or constant label, buckets not strictly
// increasing: an error wrapping [sluice.ErrInvalidConfig]) and, if
// cfg.Registerer is set, when registration fails.
func New(cfg Config) (*Collector, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Collector{}
	c.rules = obs.NewNames(cfg.MaxRules, OtherRule, c.newOutcomeCounters)
	c.newRequestMetrics(cfg)
	c.newEndpointMetrics(cfg)
	c.evictions = newEvictions(cfg.Namespace, cfg.ConstLabels)
	c.parts = []prometheus.Collector{c.decisions, c.latency, c.storeErrors, c.breaker, c.transitions,
		c.reloads, c.healed, c.evicting, c.evictions, c.resets, c.remembered, c.penalties, c.reqLimits}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	return c, nil
}

// newRequestMetrics makes the metrics of requests and their store calls
// (cfg has its defaults), and the children of the store call metrics
// that every call updates, ready.
func (c *Collector) newRequestMetrics(cfg Config) {
	ns := cfg.Namespace
	c.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "decisions_total", ConstLabels: cfg.ConstLabels,
		Help: "Rate-limit decisions, one per rule per request, by rule and outcome.",
	}, []string{"rule", "outcome"})
	c.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: ns, Name: "store_call_duration_seconds", ConstLabels: cfg.ConstLabels,
		Help:    "Duration of store calls (one per request), by result (ok or error).",
		Buckets: slices.Clone(cfg.Buckets),
	}, []string{"result"})
	c.storeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "store_errors_total", ConstLabels: cfg.ConstLabels,
		Help: "Failed store calls, by error kind and whether the call may have been applied.",
	}, []string{"kind", "ambiguous"})
	c.resets = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "resets_total", ConstLabels: cfg.ConstLabels,
		Help: "Buckets an operator reset, by rule.",
	}, []string{"rule"})
	c.remembered = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "refusals_remembered_total", ConstLabels: cfg.ConstLabels,
		Help: "Denials a store answered in process from its memory of an earlier refusal, with no store call, by rule.",
	}, []string{"rule"})
	c.penalties = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "penalties_started_total", ConstLabels: cfg.ConstLabels,
		Help: "Blocks a rule's penalty started (identities refused for the penalty's block), by rule.",
	}, []string{"rule"})
	c.reqLimits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "request_limits_total", ConstLabels: cfg.ConstLabels,
		Help: "Limits requests set for themselves (sluice.WithLimit) that a rule capped or ignored, by rule as the request named it and action (capped, unknown_rule, invalid).",
	}, []string{"rule", "action"})

	c.latencyOK = c.latency.WithLabelValues("ok")
	c.latencyErr = c.latency.WithLabelValues("error")
	for k := range obs.NumKinds {
		c.errCounters[k][0] = c.storeErrors.WithLabelValues(obs.KindNames[k], "false")
		c.errCounters[k][1] = c.storeErrors.WithLabelValues(obs.KindNames[k], "true")
	}
}

// newEndpointMetrics makes the metrics of a store's endpoints (cfg has
// its defaults): breaker states, script reloads, healed keys and eviction
// policy.
func (c *Collector) newEndpointMetrics(cfg Config) {
	ns := cfg.Namespace
	c.breaker = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Name: "breaker_state", ConstLabels: cfg.ConstLabels,
		Help: "Circuit breaker state of a store endpoint: 0 closed, 1 open, 2 half-open.",
	}, []string{"endpoint"})
	c.transitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "breaker_transitions_total", ConstLabels: cfg.ConstLabels,
		Help: "Circuit breaker state changes of a store endpoint.",
	}, []string{"endpoint", "from", "to"})
	c.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "script_reloads_total", ConstLabels: cfg.ConstLabels,
		Help: "Times a store endpoint had lost the limiter script and it was loaded again.",
	}, []string{"endpoint"})
	c.healed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "state_healed_total", ConstLabels: cfg.ConstLabels,
		Help: "Bucket keys of a store endpoint found holding something that is not a bucket's state, and replaced.",
	}, []string{"endpoint"})
	c.evicting = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Name: "store_evicting", ConstLabels: cfg.ConstLabels,
		Help: "1 when a store endpoint's eviction policy (maxmemory with a policy other than noeviction) can evict rate-limit keys, 0 when it cannot, -1 when the endpoint refuses to tell.",
	}, []string{"endpoint"})
}

// MustNew is like [New] but panics on an error; for a configuration fixed
// in code, as prometheus.MustRegister does for registration.
func MustNew(cfg Config) *Collector {
	c, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return c
}

// withDefaults returns cfg with its zero fields set to their defaults.
func (cfg Config) withDefaults() Config {
	cfg.Namespace = cmp.Or(cfg.Namespace, DefaultNamespace)
	if cfg.Buckets == nil {
		cfg.Buckets = DefaultBuckets()
	}
	cfg.MaxRules = cmp.Or(cfg.MaxRules, DefaultMaxRules)
	return cfg
}

// validate checks a configuration with its defaults set.
func (cfg Config) validate() error {
	if err := validateNames(cfg.Namespace, cfg.ConstLabels, collectorLabels); err != nil {
		return err
	}
	if len(cfg.Buckets) == 0 {
		return fmt.Errorf("%w: metrics: no histogram buckets", sluice.ErrInvalidConfig)
	}
	for i := 1; i < len(cfg.Buckets); i++ {
		if !(cfg.Buckets[i] > cfg.Buckets[i-1]) {
			return fmt.Errorf("%w: metrics: histogram buckets not strictly increasing at %v", sluice.ErrInvalidConfig, cfg.Buckets[i])
		}
	}
	return nil
}

// collectorLabels are the label names of a [Collector]'s metrics, which
// no constant label may take.
var collectorLabels = []string{"rule", "action", "outcome", "result", "kind", "ambiguous", "endpoint", "from", "to", "le"}

// validateNames checks a collector's namespace and constant labels: legacy
// Prometheus names, label names not reserved ("__" prefixed) nor among the
// collector's own labels, label values valid UTF-8.
func validateNames(namespace string, constLabels prometheus.Labels, own []string) error {
	if !validName(namespace) {
		return fmt.Errorf("%w: metrics: invalid namespace %q", sluice.ErrInvalidConfig, namespace)
	}
	for name, value := range constLabels {
		if !validName(name) || strings.HasPrefix(name, "__") || !utf8.ValidString(value) {
			return fmt.Errorf("%w: metrics: invalid constant label %q=%q", sluice.ErrInvalidConfig, name, value)
		}
		if slices.Contains(own, name) {
			return fmt.Errorf("%w: metrics: constant label %q is a label of sluice's metrics", sluice.ErrInvalidConfig, name)
		}
	}
	return nil
}

// validName reports whether s is a legacy Prometheus metric or label name,
// which every scraper accepts.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
		case '0' <= r && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Describe sends the descriptors of the collector's metrics to ch. It
// implements [prometheus.Collector].
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.parts {
		m.Describe(ch)
	}
}

// Collect sends the collector's current metrics to ch. It implements
// [prometheus.Collector].
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.parts {
		m.Collect(ch)
	}
}

// Observe counts d in sluice_decisions_total under d.Rule and d.Outcome.
// It implements [sluice.Observer]. It reads nothing but d.Rule and
// d.Outcome: store latency and errors are counted once per store call by
// [Collector.ObserveStoreCall], not once per rule.
func (c *Collector) Observe(_ context.Context, d sluice.Decision) {
	oc := c.rules.Get(d.Rule)
	if int(d.Outcome) < len(oc.counters) {
		oc.counters[d.Outcome].Inc()
		if d.Result.Remembered && (d.Outcome == sluice.OutcomeDenied || d.Outcome == sluice.OutcomeBlocked) {
			oc.remembered.Inc()
		}
		if d.Result.BlockStarted && d.Outcome == sluice.OutcomeBlocked {
			oc.penalties.Inc()
		}
		return
	}
	// Not a valid outcome: counted, but as "unknown", in a series that
	// exists only if this happens.
	c.decisions.WithLabelValues(oc.label, "unknown").Inc()
}

// newOutcomeCounters creates the series of rule for every known outcome.
func (c *Collector) newOutcomeCounters(rule string) *outcomeCounters {
	// Rule names are validated as printable ASCII, but a custom caller of
	// Observe may pass anything, and the client library panics on invalid
	// UTF-8.
	oc := &outcomeCounters{
		label:    strings.ToValidUTF8(rule, "\uFFFD"),
		counters: make([]prometheus.Counter, len(obs.OutcomeLabels)),
	}
	for i, o := range obs.OutcomeLabels {
		oc.counters[i] = c.decisions.WithLabelValues(oc.label, o)
	}
	oc.remembered = c.remembered.WithLabelValues(oc.label)
	oc.penalties = c.penalties.WithLabelValues(oc.label)
	for a := sluice.RequestLimitAction(0); a.String() != "unknown"; a++ {
		oc.reqLimits = append(oc.reqLimits, c.reqLimits.WithLabelValues(oc.label, a.String()))
	}
	return oc
}

// ObserveStoreCall records call's latency in
// sluice_store_call_duration_seconds and, for a failed call, counts its
// error in sluice_store_errors_total. It implements
// [sluice.StoreCallObserver].
func (c *Collector) ObserveStoreCall(_ context.Context, call sluice.StoreCall) {
	secs := call.Latency.Seconds()
	if call.Err == nil {
		c.latencyOK.Observe(secs)
		return
	}
	c.latencyErr.Observe(secs)
	k, ambiguous := obs.Classify(call.Err)
	a := 0
	if ambiguous {
		a = 1
	}
	c.errCounters[k][a].Inc()
}

// ScriptReloaded counts a script reload of endpoint in
// sluice_script_reloads_total. It implements [sluice.StoreEvents].
func (c *Collector) ScriptReloaded(endpoint string) {
	c.reloads.WithLabelValues(strings.ToValidUTF8(endpoint, "\uFFFD")).Inc()
}

// StateHealed counts a bucket key of endpoint replaced because it held
// something that is not a bucket's state, in sluice_state_healed_total. It
// implements [sluice.StateHealedEvents].
func (c *Collector) StateHealed(endpoint string) {
	c.healed.WithLabelValues(strings.ToValidUTF8(endpoint, "\uFFFD")).Inc()
}

// EvictionPolicyChecked sets sluice_store_evicting for endpoint: 1 when its
// policy can evict the store's keys, -1 when the policy is unknown (empty:
// the server refused to tell). It implements [sluice.EvictionPolicyEvents].
func (c *Collector) EvictionPolicyChecked(endpoint, policy string, evicting bool) {
	v := 0.0
	switch {
	case evicting:
		v = 1
	case policy == "":
		v = -1
	}
	c.evicting.WithLabelValues(strings.ToValidUTF8(endpoint, "\uFFFD")).Set(v)
}

// ObserveReset counts a bucket an operator reset under rule in
// sluice_resets_total. It implements [sluice.ResetObserver].
func (c *Collector) ObserveReset(_ context.Context, rule string) {
	c.resets.WithLabelValues(strings.ToValidUTF8(rule, "\uFFFD")).Inc()
}

// ObserveRequestLimit counts a limit a request set for itself that a rule
// capped or ignored in sluice_request_limits_total, under the rule name the
// request gave (within [Config.MaxRules], as decisions are) and the action.
// It implements [sluice.RequestLimitObserver].
func (c *Collector) ObserveRequestLimit(_ context.Context, e sluice.RequestLimitEvent) {
	if oc := c.rules.Get(e.Rule); int(e.Action) < len(oc.reqLimits) {
		oc.reqLimits[e.Action].Inc()
	}
}

// ErrorKind names the kind of a store error, as the kind label of
// sluice_store_errors_total has it: "process_slow" for
// [sluice.ErrProcessSlow] (a timeout this process noticed late: starved of
// CPU, not kept waiting by the store), "timeout", "unavailable",
// "cluster_down", "breaker_open", "script_missing", "corrupt_state",
// "closed" (for the sentinels of the same names, such as
// [sluice.ErrTimeout]), "invalid" ([sluice.ErrInvalidHit],
// [sluice.ErrInvalidLimit], and [sluice.ErrInvalidConfig], such as a
// command the Redis user may not run), "timeout" and "canceled" for a bare
// [context.DeadlineExceeded] or [context.Canceled], and "other" for
// anything else, nil included. It matches with errors.Is and never reads
// the error's message. For a [*sluice.StoreError], its Kind decides.
func ErrorKind(err error) string {
	k, _ := obs.Classify(err)
	return obs.KindNames[k]
}

// The interfaces a Collector implements: every sink's, and Prometheus's.
var (
	_ prometheus.Collector = (*Collector)(nil)
	_ obs.Sink             = (*Collector)(nil)
)
