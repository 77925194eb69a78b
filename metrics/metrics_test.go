package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
)

var allOutcomes = []sluice.Outcome{
	sluice.OutcomeAllowed, sluice.OutcomeDenied, sluice.OutcomeShadowDenied,
	sluice.OutcomeFailedOpen, sluice.OutcomeFailedClosed, sluice.OutcomeLocal,
	sluice.OutcomeBypassed, sluice.OutcomeBlocked,
}

func TestDecisionsByRuleAndOutcome(t *testing.T) {
	c, reg := newCollector(t, metrics.Config{})
	ctx := context.Background()
	for i, o := range allOutcomes {
		for range i + 1 {
			c.Observe(ctx, sluice.Decision{Rule: "per-ip", Outcome: o})
		}
	}
	c.Observe(ctx, sluice.Decision{Rule: "per-user", Outcome: sluice.OutcomeDenied})

	got := series(t, reg)
	exp := map[string]float64{}
	for i, o := range allOutcomes {
		exp[decisions("per-ip", o.String())] = float64(i + 1)
		exp[decisions("per-user", o.String())] = 0 // every outcome exists from the first observation
	}
	exp[decisions("per-user", "denied")] = 1
	want(t, got, exp)
	for _, name := range []string{"allowed", "denied", "shadow_denied", "failed_open", "failed_closed", "local", "bypassed", "blocked"} {
		if _, ok := got[decisions("per-ip", name)]; !ok {
			t.Errorf("no series for outcome %q", name)
		}
	}
	n := 0
	for k := range got {
		if strings.HasPrefix(k, "sluice_decisions_total{") {
			n++
		}
	}
	if n != 2*len(allOutcomes) {
		t.Errorf("%d decision series, want %d (two rules, every outcome)", n, 2*len(allOutcomes))
	}
}

func TestUnknownOutcome(t *testing.T) {
	c, reg := newCollector(t, metrics.Config{})
	c.Observe(context.Background(), sluice.Decision{Rule: "r", Outcome: sluice.Outcome(200)})
	want(t, series(t, reg), map[string]float64{decisions("r", "unknown"): 1, decisions("r", "allowed"): 0})
}

func TestStoreCallLatency(t *testing.T) {
	c, reg := newCollector(t, metrics.Config{})
	ctx := context.Background()
	for _, d := range []time.Duration{40 * time.Microsecond, 300 * time.Microsecond, 2 * time.Millisecond, 2 * time.Second} {
		c.ObserveStoreCall(ctx, sluice.StoreCall{Latency: d, Hits: 2})
	}
	c.ObserveStoreCall(ctx, sluice.StoreCall{Latency: 51 * time.Millisecond, Err: &sluice.StoreError{Kind: sluice.ErrTimeout, Ambiguous: true}})

	mf := family(t, reg, "sluice_store_call_duration_seconds")
	if mf == nil {
		t.Fatal("no latency histogram")
	}
	if len(mf.GetMetric()) != 2 {
		t.Fatalf("%d latency series, want 2 (ok, error)", len(mf.GetMetric()))
	}
	for _, m := range mf.GetMetric() {
		h := m.GetHistogram()
		buckets := map[float64]uint64{}
		for _, b := range h.GetBucket() {
			buckets[b.GetUpperBound()] = b.GetCumulativeCount()
		}
		if len(buckets) != len(metrics.DefaultBuckets()) {
			t.Errorf("%d buckets, want %d", len(buckets), len(metrics.DefaultBuckets()))
		}
		switch r := labelValue(m, "result"); r {
		case "ok":
			if h.GetSampleCount() != 4 {
				t.Errorf("ok count = %d, want 4", h.GetSampleCount())
			}
			if s := h.GetSampleSum(); math.Abs(s-2.00234) > 1e-9 {
				t.Errorf("ok sum = %v, want 2.00234", s)
			}
			for le, n := range map[float64]uint64{0.00005: 1, 0.0005: 2, 0.0025: 3, 1: 3} {
				if buckets[le] != n {
					t.Errorf("ok bucket le=%v: %d, want %d", le, buckets[le], n)
				}
			}
		case "error":
			if h.GetSampleCount() != 1 || buckets[0.05] != 0 || buckets[0.1] != 1 {
				t.Errorf("error: count %d, le=0.05 %d, le=0.1 %d; want 1, 0, 1", h.GetSampleCount(), buckets[0.05], buckets[0.1])
			}
		default:
			t.Errorf("result label %q", r)
		}
	}
}

func TestCustomBuckets(t *testing.T) {
	c, reg := newCollector(t, metrics.Config{Buckets: []float64{0.001, 0.01}})
	c.ObserveStoreCall(context.Background(), sluice.StoreCall{Latency: 5 * time.Millisecond})
	mf := family(t, reg, "sluice_store_call_duration_seconds")
	for _, m := range mf.GetMetric() {
		if b := m.GetHistogram().GetBucket(); len(b) != 2 {
			t.Errorf("%d buckets, want 2", len(b))
		}
	}
}

func TestErrorKinds(t *testing.T) {
	sentinels := []struct {
		err  error
		kind string
	}{
		{sluice.ErrTimeout, "timeout"},
		{sluice.ErrUnavailable, "unavailable"},
		{sluice.ErrClusterDown, "cluster_down"},
		{sluice.ErrBreakerOpen, "breaker_open"},
		{sluice.ErrScriptMissing, "script_missing"},
		{sluice.ErrCorruptState, "corrupt_state"},
		{sluice.ErrClosed, "closed"},
		{sluice.ErrInvalidHit, "invalid"},
		{sluice.ErrInvalidLimit, "invalid"},
		{sluice.ErrInvalidConfig, "invalid"},
	}
	type tc struct {
		name      string
		err       error
		kind      string
		ambiguous bool
	}
	var cases []tc
	for _, s := range sentinels {
		cause := errors.New("dial tcp 10.0.0.1:6379: connection refused")
		se := &sluice.StoreError{Op: "redisstore: take", Kind: s.err, Err: cause}
		amb := &sluice.StoreError{Op: "redisstore: take", Kind: s.err, Ambiguous: true, Err: cause}
		cases = append(cases,
			tc{s.kind + "/bare", s.err, s.kind, false},
			tc{s.kind + "/wrapped", fmt.Errorf("take: %w", s.err), s.kind, false},
			tc{s.kind + "/store-error", se, s.kind, false},
			tc{s.kind + "/store-error-ambiguous", amb, s.kind, true},
			tc{s.kind + "/wrapped-store-error", fmt.Errorf("lease: %w", amb), s.kind, true},
			tc{s.kind + "/joined", errors.Join(errors.New("x"), se), s.kind, false},
			// A StoreError without a Kind, its sentinel in Err.
			tc{s.kind + "/in-cause", &sluice.StoreError{Op: "x", Err: fmt.Errorf("c: %w", s.err)}, s.kind, false},
		)
	}
	cases = append(cases,
		tc{"deadline", context.DeadlineExceeded, "timeout", false},
		tc{"deadline-wrapped", fmt.Errorf("x: %w", context.DeadlineExceeded), "timeout", false},
		tc{"canceled", context.Canceled, "canceled", false},
		// The Kind decides over the cause.
		tc{"kind-over-cause", &sluice.StoreError{Kind: sluice.ErrUnavailable, Ambiguous: true, Err: context.Canceled}, "unavailable", true},
		tc{"process-slow", &sluice.StoreError{Kind: sluice.ErrProcessSlow, Ambiguous: true, Err: &sluice.StoreError{Kind: sluice.ErrTimeout, Ambiguous: true}}, "process_slow", true},
		tc{"timeout-with-deadline", &sluice.StoreError{Kind: sluice.ErrTimeout, Ambiguous: true, Err: context.DeadlineExceeded}, "timeout", true},
		tc{"other", errors.New("something"), "other", false},
		tc{"other-store-error", &sluice.StoreError{Op: "x", Ambiguous: true, Err: io.EOF}, "other", true},
		// A message naming a kind does not make it that kind.
		tc{"no-strings", errors.New("sluice: store timeout"), "other", false},
	)
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			if got := metrics.ErrorKind(tt.err); got != tt.kind {
				t.Errorf("ErrorKind = %q, want %q", got, tt.kind)
			}
			if sluice.IsAmbiguous(tt.err) != tt.ambiguous {
				t.Fatalf("bad case: IsAmbiguous = %v", !tt.ambiguous)
			}
			c, reg := newCollector(t, metrics.Config{})
			c.ObserveStoreCall(context.Background(), sluice.StoreCall{Latency: time.Millisecond, Err: tt.err})
			got := series(t, reg)
			key := fmt.Sprintf("sluice_store_errors_total{ambiguous=%q,kind=%q}", strconv.FormatBool(tt.ambiguous), tt.kind)
			for k, v := range got {
				if !strings.HasPrefix(k, "sluice_store_errors_total{") {
					continue
				}
				switch {
				case k == key && v != 1:
					t.Errorf("%s = %v, want 1", k, v)
				case k != key && v != 0:
					t.Errorf("%s = %v, want 0", k, v)
				}
			}
			want(t, got, map[string]float64{
				key: 1,
				`sluice_store_call_duration_seconds_count{result="error"}`: 1,
				`sluice_store_call_duration_seconds_count{result="ok"}`:    0,
			})
		})
	}
	if got := metrics.ErrorKind(nil); got != "other" {
		t.Errorf("ErrorKind(nil) = %q", got)
	}
}

func TestErrorSeriesExistFromStart(t *testing.T) {
	_, reg := newCollector(t, metrics.Config{})
	got := series(t, reg)
	for _, kind := range []string{"process_slow", "timeout", "unavailable", "cluster_down", "breaker_open", "script_missing", "corrupt_state", "closed", "invalid", "canceled", "other"} {
		for _, amb := range []string{"true", "false"} {
			key := fmt.Sprintf("sluice_store_errors_total{ambiguous=%q,kind=%q}", amb, kind)
			if v, ok := got[key]; !ok || v != 0 {
				t.Errorf("%s = %v, %v; want 0, present", key, v, ok)
			}
		}
	}
}

func TestBreaker(t *testing.T) {
	c, reg := newCollector(t, metrics.Config{})
	const a, b = "10.0.0.1:6379", "10.0.0.2:6379"
	gauge := func(ep string) string { return fmt.Sprintf("sluice_breaker_state{endpoint=%q}", ep) }
	trans := func(ep, from, to string) string {
		return fmt.Sprintf("sluice_breaker_transitions_total{endpoint=%q,from=%q,to=%q}", ep, from, to)
	}

	c.BreakerChanged(a, sluice.BreakerClosed, sluice.BreakerOpen)
	want(t, series(t, reg), map[string]float64{gauge(a): 1, trans(a, "closed", "open"): 1})

	c.BreakerChanged(a, sluice.BreakerOpen, sluice.BreakerHalfOpen)
	want(t, series(t, reg), map[string]float64{gauge(a): 2, trans(a, "open", "half_open"): 1})

	c.BreakerChanged(a, sluice.BreakerHalfOpen, sluice.BreakerOpen)
	c.BreakerChanged(a, sluice.BreakerOpen, sluice.BreakerHalfOpen)
	c.BreakerChanged(a, sluice.BreakerHalfOpen, sluice.BreakerClosed)
	c.BreakerChanged(b, sluice.BreakerClosed, sluice.BreakerOpen)
	got := series(t, reg)
	want(t, got, map[string]float64{
		gauge(a):                        0,
		gauge(b):                        1,
		trans(a, "closed", "open"):      1,
		trans(a, "open", "half_open"):   2,
		trans(a, "half_open", "open"):   1,
		trans(a, "half_open", "closed"): 1,
		trans(b, "closed", "open"):      1,
	})
	n := 0
	for k := range got {
		if strings.HasPrefix(k, "sluice_breaker_transitions_total{") {
			n++
		}
	}
	if n != 5 {
		t.Errorf("%d transition series, want 5", n)
	}
}

func TestScriptReloads(t *testing.T) {
	c, reg := newCollector(t, metrics.Config{})
	c.ScriptReloaded("10.0.0.1:6379")
	c.ScriptReloaded("10.0.0.1:6379")
	c.ScriptReloaded("10.0.0.2:6379")
	want(t, series(t, reg), map[string]float64{
		`sluice_script_reloads_total{endpoint="10.0.0.1:6379"}`: 2,
		`sluice_script_reloads_total{endpoint="10.0.0.2:6379"}`: 1,
	})
}

func TestStateHealed(t *testing.T) {
	c, reg := newCollector(t, metrics.Config{})
	c.StateHealed("10.0.0.1:6379")
	c.StateHealed("10.0.0.1:6379")
	c.StateHealed("10.0.0.2:6379")
	want(t, series(t, reg), map[string]float64{
		`sluice_state_healed_total{endpoint="10.0.0.1:6379"}`: 2,
		`sluice_state_healed_total{endpoint="10.0.0.2:6379"}`: 1,
	})
}

// A denial a store answered from memory counts as a denial and as a
// remembered refusal; no other decision does.
func TestRefusalsRemembered(t *testing.T) {
	c, reg := newCollector(t, metrics.Config{})
	ctx := context.Background()
	c.Observe(ctx, sluice.Decision{Rule: "per-ip", Outcome: sluice.OutcomeDenied, Result: sluice.Result{Remembered: true}})
	c.Observe(ctx, sluice.Decision{Rule: "per-ip", Outcome: sluice.OutcomeDenied, Result: sluice.Result{Remembered: true}})
	c.Observe(ctx, sluice.Decision{Rule: "per-ip", Outcome: sluice.OutcomeDenied})
	c.Observe(ctx, sluice.Decision{Rule: "per-user", Outcome: sluice.OutcomeAllowed})
	got := series(t, reg)
	want(t, got, map[string]float64{
		`sluice_refusals_remembered_total{rule="per-ip"}`:   2,
		`sluice_refusals_remembered_total{rule="per-user"}`: 0,
		decisions("per-ip", "denied"):                       3,
	})
}

func TestResets(t *testing.T) {
	c, reg := newCollector(t, metrics.Config{})
	var o sluice.Observer = c
	ro, ok := o.(sluice.ResetObserver)
	if !ok {
		t.Fatal("the collector is not a sluice.ResetObserver")
	}
	ro.ObserveReset(context.Background(), "per-ip")
	ro.ObserveReset(context.Background(), "per-ip")
	ro.ObserveReset(context.Background(), "per-user")
	want(t, series(t, reg), map[string]float64{
		`sluice_resets_total{rule="per-ip"}`:   2,
		`sluice_resets_total{rule="per-user"}`: 1,
	})
}

// TestLabelsCarryNoKeys feeds decisions and store calls whose results and
// errors mention keys, identities and addresses, and checks that no label
// has any of them, and that each metric has exactly its documented labels.
func TestLabelsCarryNoKeys(t *testing.T) {
	c, reg := newCollector(t, metrics.Config{})
	secrets := []string{"203.0.113.7", "alice", "sk_live_12345", "sl:{ab}:"}
	cause := fmt.Errorf("key sl:{ab}:per-ip:203.0.113.7 of user alice (api key sk_live_12345): %w", io.ErrUnexpectedEOF)
	serr := &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrUnavailable, Ambiguous: true, Err: cause}
	type ctxKey struct{}
	ctx := context.WithValue(context.Background(), ctxKey{}, "alice 203.0.113.7 sk_live_12345")
	lim := sluice.Limit{Rate: 10, Period: time.Second, Burst: 10}
	c.Observe(ctx, sluice.Decision{
		Rule: "per-ip", Outcome: sluice.OutcomeDenied,
		Result:  sluice.Result{Limit: lim, Remaining: 0, RetryAfter: time.Second},
		Latency: time.Millisecond,
	})
	c.Observe(ctx, sluice.Decision{Rule: "per-key", Outcome: sluice.OutcomeFailedOpen, Err: serr, Latency: time.Millisecond})
	c.ObserveStoreCall(ctx, sluice.StoreCall{Latency: time.Millisecond, Hits: 2, Err: serr})
	c.ObserveStoreCall(ctx, sluice.StoreCall{Latency: time.Millisecond, Hits: 2, Err: cause})
	c.BreakerChanged("10.0.0.1:6379", sluice.BreakerClosed, sluice.BreakerOpen)
	c.ScriptReloaded("10.0.0.1:6379")
	c.StateHealed("10.0.0.1:6379")

	labels := map[string][]string{
		"sluice_decisions_total":             {"outcome", "rule"},
		"sluice_store_call_duration_seconds": {"result"},
		"sluice_store_errors_total":          {"ambiguous", "kind"},
		"sluice_breaker_state":               {"endpoint"},
		"sluice_breaker_transitions_total":   {"endpoint", "from", "to"},
		"sluice_script_reloads_total":        {"endpoint"},
		"sluice_state_healed_total":          {"endpoint"},
		"sluice_memstore_evictions_total":    nil,
		"sluice_refusals_remembered_total":   {"rule"},
		"sluice_penalties_started_total":     {"rule"},
		"sluice_request_limits_total":        {"action", "rule"},
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != len(labels) {
		t.Errorf("%d metric families, want %d", len(mfs), len(labels))
	}
	for _, mf := range mfs {
		exp, ok := labels[mf.GetName()]
		if !ok {
			t.Errorf("unexpected metric %s", mf.GetName())
			continue
		}
		for _, m := range mf.GetMetric() {
			var names []string
			for _, l := range m.GetLabel() {
				names = append(names, l.GetName())
				for _, s := range secrets {
					if strings.Contains(l.GetValue(), s) {
						t.Errorf("%s: label %s=%q holds %q", mf.GetName(), l.GetName(), l.GetValue(), s)
					}
				}
			}
			if strings.Join(names, ",") != strings.Join(exp, ",") {
				t.Errorf("%s has labels %v, want %v", mf.GetName(), names, exp)
			}
		}
	}
	want(t, series(t, reg), map[string]float64{
		decisions("per-ip", "denied"):                                    1,
		decisions("per-key", "failed_open"):                              1,
		`sluice_store_errors_total{ambiguous="true",kind="unavailable"}`: 1,
		`sluice_store_errors_total{ambiguous="false",kind="other"}`:      1,
	})
}

func TestRuleCap(t *testing.T) {
	c, reg := newCollector(t, metrics.Config{MaxRules: 3})
	ctx := context.Background()
	// 3 rules of their own, then 3 folded names remembered, then 4 more
	// folded without being remembered; each observed twice.
	for range 2 {
		for i := range 10 {
			c.Observe(ctx, sluice.Decision{Rule: fmt.Sprintf("rule-%d", i), Outcome: sluice.OutcomeDenied})
		}
	}
	got := series(t, reg)
	want(t, got, map[string]float64{
		decisions("rule-0", "denied"):          2,
		decisions("rule-1", "denied"):          2,
		decisions("rule-2", "denied"):          2,
		decisions(metrics.OtherRule, "denied"): 14,
	})
	for k := range got {
		if strings.Contains(k, `rule="rule-`) && !strings.Contains(k, `rule="rule-0"`) &&
			!strings.Contains(k, `rule="rule-1"`) && !strings.Contains(k, `rule="rule-2"`) {
			t.Errorf("folded rule has a series: %s", k)
		}
	}
	// A rule seen before the cap filled keeps its own series.
	c.Observe(ctx, sluice.Decision{Rule: "rule-1", Outcome: sluice.OutcomeAllowed})
	want(t, series(t, reg), map[string]float64{decisions("rule-1", "allowed"): 1})
}

func TestRuleCapDefaultAndUnlimited(t *testing.T) {
	ctx := context.Background()
	c, reg := newCollector(t, metrics.Config{})
	for i := range metrics.DefaultMaxRules + 5 {
		c.Observe(ctx, sluice.Decision{Rule: "r" + strconv.Itoa(i), Outcome: sluice.OutcomeAllowed})
	}
	got := series(t, reg)
	want(t, got, map[string]float64{decisions(metrics.OtherRule, "allowed"): 5, decisions("r999", "allowed"): 1})
	if _, ok := got[decisions("r1000", "allowed")]; ok {
		t.Error("rule 1001 has its own series")
	}

	c, reg = newCollector(t, metrics.Config{MaxRules: -1})
	for i := range metrics.DefaultMaxRules + 5 {
		c.Observe(ctx, sluice.Decision{Rule: "r" + strconv.Itoa(i), Outcome: sluice.OutcomeAllowed})
	}
	got = series(t, reg)
	want(t, got, map[string]float64{decisions("r1004", "allowed"): 1})
	if _, ok := got[decisions(metrics.OtherRule, "allowed")]; ok {
		t.Error("no cap, but rules were folded")
	}
}

func TestInvalidUTF8Labels(t *testing.T) {
	c, reg := newCollector(t, metrics.Config{})
	c.Observe(context.Background(), sluice.Decision{Rule: "bad\xff", Outcome: sluice.OutcomeAllowed})
	c.ScriptReloaded("ep\xfe")
	c.BreakerChanged("ep\xfe", sluice.BreakerClosed, sluice.BreakerOpen)
	want(t, series(t, reg), map[string]float64{
		decisions("bad\uFFFD", "allowed"):                                   1,
		fmt.Sprintf("sluice_script_reloads_total{endpoint=%q}", "ep\uFFFD"): 1,
	})
}

func TestConfig(t *testing.T) {
	bad := []metrics.Config{
		{Namespace: "bad-name"},
		{Namespace: "9lives"},
		{Buckets: []float64{}},
		{Buckets: []float64{0.1, 0.1}},
		{Buckets: []float64{0.2, 0.1}},
		{ConstLabels: prometheus.Labels{"rule": "x"}},
		{ConstLabels: prometheus.Labels{"bad-label": "x"}},
		{ConstLabels: prometheus.Labels{"__name": "x"}},
		{ConstLabels: prometheus.Labels{"limiter": "bad\xff"}},
	}
	for _, cfg := range bad {
		if c, err := metrics.New(cfg); c != nil || !errors.Is(err, sluice.ErrInvalidConfig) {
			t.Errorf("New(%+v): %v, want an error wrapping ErrInvalidConfig", cfg, err)
		}
	}

	c, err := metrics.New(metrics.Config{Namespace: "api_limits"})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	c.Observe(context.Background(), sluice.Decision{Rule: "r", Outcome: sluice.OutcomeAllowed})
	if _, ok := series(t, reg)[`api_limits_decisions_total{outcome="allowed",rule="r"}`]; !ok {
		t.Error("namespace not applied")
	}

	// Registration through Config.Registerer; a second identical
	// collector collides, one with other constant labels does not.
	reg = prometheus.NewPedanticRegistry()
	if _, err := metrics.New(metrics.Config{Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.New(metrics.Config{Registerer: reg}); err == nil {
		t.Error("a second collector registered with the same metrics")
	}
	if _, err := metrics.New(metrics.Config{Registerer: reg, ConstLabels: prometheus.Labels{"limiter": "b"}}); err == nil {
		t.Error("a collector with const labels registered beside one without (inconsistent label names)")
	}
	reg = prometheus.NewPedanticRegistry()
	a, err1 := metrics.New(metrics.Config{Registerer: reg, ConstLabels: prometheus.Labels{"limiter": "a"}})
	b, err2 := metrics.New(metrics.Config{Registerer: reg, ConstLabels: prometheus.Labels{"limiter": "b"}})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	a.Observe(context.Background(), sluice.Decision{Rule: "r", Outcome: sluice.OutcomeDenied})
	b.Observe(context.Background(), sluice.Decision{Rule: "r", Outcome: sluice.OutcomeAllowed})
	want(t, series(t, reg), map[string]float64{
		`sluice_decisions_total{limiter="a",outcome="denied",rule="r"}`:  1,
		`sluice_decisions_total{limiter="b",outcome="allowed",rule="r"}`: 1,
		`sluice_decisions_total{limiter="b",outcome="denied",rule="r"}`:  0,
	})
}

// TestLint runs the client library's linter over every metric.
func TestLint(t *testing.T) {
	c, _ := newCollector(t, metrics.Config{})
	ctx := context.Background()
	c.Observe(ctx, sluice.Decision{Rule: "r", Outcome: sluice.OutcomeAllowed})
	c.ObserveStoreCall(ctx, sluice.StoreCall{Latency: time.Millisecond})
	c.BreakerChanged("e:1", sluice.BreakerClosed, sluice.BreakerOpen)
	c.ScriptReloaded("e:1")
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	if n := testutil.CollectAndCount(c); n < 10 {
		t.Errorf("%d series collected", n)
	}
}

func TestConcurrent(t *testing.T) {
	c, reg := newCollector(t, metrics.Config{MaxRules: 4})
	ctx := context.Background()
	const workers, per = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range per {
				c.Observe(ctx, sluice.Decision{Rule: fmt.Sprintf("rule-%d", i%6), Outcome: allOutcomes[i%len(allOutcomes)]})
				if i%10 == 0 {
					c.ObserveStoreCall(ctx, sluice.StoreCall{Latency: time.Duration(i) * time.Microsecond})
					c.ObserveStoreCall(ctx, sluice.StoreCall{Latency: time.Millisecond, Err: &sluice.StoreError{Kind: sluice.ErrTimeout, Ambiguous: true}})
				}
				if i%50 == 0 {
					c.BreakerChanged(fmt.Sprintf("ep-%d", w%2), sluice.BreakerClosed, sluice.BreakerOpen)
					c.ScriptReloaded(fmt.Sprintf("ep-%d", w%2))
				}
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			if _, err := reg.Gather(); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()

	got := series(t, reg)
	var total float64
	for k, v := range got {
		if strings.HasPrefix(k, "sluice_decisions_total{") {
			total += v
		}
	}
	if total != workers*per {
		t.Errorf("decisions total %v, want %d", total, workers*per)
	}
	want(t, got, map[string]float64{
		`sluice_store_call_duration_seconds_count{result="ok"}`:                     workers * per / 10,
		`sluice_store_errors_total{ambiguous="true",kind="timeout"}`:                workers * per / 10,
		`sluice_script_reloads_total{endpoint="ep-0"}`:                              workers / 2 * per / 50,
		`sluice_breaker_transitions_total{endpoint="ep-1",from="closed",to="open"}`: workers / 2 * per / 50,
	})
	// rule-0..rule-3 won the four slots in some order; rule-4 and rule-5
	// were folded: 2 of every 6 decisions.
	var other float64
	for _, o := range allOutcomes {
		other += got[decisions(metrics.OtherRule, o.String())]
	}
	if other != workers*(per/6*2+max(0, per%6-4)) {
		t.Errorf("folded decisions %v, want %d", other, workers*(per/6*2+max(0, per%6-4)))
	}
}

// TestScrape serves the registry through promhttp, scrapes it over HTTP
// and reads the text exposition.
func TestScrape(t *testing.T) {
	c, reg := newCollector(t, metrics.Config{})
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	ctx := context.Background()

	scrape := func() (map[string]float64, map[string]string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("Accept", "text/plain; version=0.0.4")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("scrape: %d %v\n%s", resp.StatusCode, err, body)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			t.Fatalf("Content-Type %q", ct)
		}
		values, types := map[string]float64{}, map[string]string{}
		for _, line := range strings.Split(string(body), "\n") {
			if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
				name, typ, _ := strings.Cut(f, " ")
				types[name] = typ
				continue
			}
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			i := strings.LastIndexByte(line, ' ')
			v, err := strconv.ParseFloat(line[i+1:], 64)
			if err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			values[normalize(line[:i])] = v
		}
		return values, types
	}

	got, _ := scrape()
	want(t, got, map[string]float64{
		`sluice_store_errors_total{ambiguous="true",kind="timeout"}`: 0,
		`sluice_store_call_duration_seconds_count{result="ok"}`:      0,
	})

	// A fault: the breaker opens, calls fail fast, rules fail open and
	// closed; then the store is back and the script had to be reloaded.
	for range 3 {
		c.ObserveStoreCall(ctx, sluice.StoreCall{Latency: 50 * time.Millisecond, Hits: 2, Err: &sluice.StoreError{Kind: sluice.ErrTimeout, Ambiguous: true}})
		c.Observe(ctx, sluice.Decision{Rule: "per-ip", Outcome: sluice.OutcomeFailedOpen})
		c.Observe(ctx, sluice.Decision{Rule: "login", Outcome: sluice.OutcomeFailedClosed})
	}
	c.BreakerChanged("127.0.0.1:6379", sluice.BreakerClosed, sluice.BreakerOpen)
	c.ObserveStoreCall(ctx, sluice.StoreCall{Latency: 3 * time.Microsecond, Hits: 2, Err: fmt.Errorf("take: %w", &sluice.StoreError{Kind: sluice.ErrBreakerOpen})})
	c.Observe(ctx, sluice.Decision{Rule: "per-ip", Outcome: sluice.OutcomeLocal})
	got, _ = scrape()
	want(t, got, map[string]float64{
		`sluice_store_errors_total{ambiguous="true",kind="timeout"}`:           3,
		`sluice_store_errors_total{ambiguous="false",kind="breaker_open"}`:     1,
		`sluice_decisions_total{outcome="failed_open",rule="per-ip"}`:          3,
		`sluice_decisions_total{outcome="local",rule="per-ip"}`:                1,
		`sluice_decisions_total{outcome="failed_closed",rule="login"}`:         3,
		`sluice_breaker_state{endpoint="127.0.0.1:6379"}`:                      1,
		`sluice_store_call_duration_seconds_count{result="error"}`:             4,
		`sluice_store_call_duration_seconds_bucket{le="5e-05",result="error"}`: 1,
		`sluice_store_call_duration_seconds_bucket{le="0.05",result="error"}`:  4,
	})

	c.BreakerChanged("127.0.0.1:6379", sluice.BreakerOpen, sluice.BreakerHalfOpen)
	c.ScriptReloaded("127.0.0.1:6379")
	c.BreakerChanged("127.0.0.1:6379", sluice.BreakerHalfOpen, sluice.BreakerClosed)
	c.ObserveStoreCall(ctx, sluice.StoreCall{Latency: 400 * time.Microsecond, Hits: 2})
	c.Observe(ctx, sluice.Decision{Rule: "per-ip", Outcome: sluice.OutcomeAllowed})
	c.Observe(ctx, sluice.Decision{Rule: "login", Outcome: sluice.OutcomeDenied})
	got, types := scrape()
	want(t, got, map[string]float64{
		`sluice_breaker_state{endpoint="127.0.0.1:6379"}`:                                          0,
		`sluice_breaker_transitions_total{endpoint="127.0.0.1:6379",from="half_open",to="closed"}`: 1,
		`sluice_script_reloads_total{endpoint="127.0.0.1:6379"}`:                                   1,
		`sluice_store_call_duration_seconds_count{result="ok"}`:                                    1,
		`sluice_store_call_duration_seconds_bucket{le="0.00025",result="ok"}`:                      0,
		`sluice_store_call_duration_seconds_bucket{le="0.0005",result="ok"}`:                       1,
		`sluice_store_call_duration_seconds_bucket{le="+Inf",result="ok"}`:                         1,
		`sluice_decisions_total{outcome="allowed",rule="per-ip"}`:                                  1,
		`sluice_decisions_total{outcome="denied",rule="login"}`:                                    1,
	})
	for name, typ := range map[string]string{
		"sluice_decisions_total":             "counter",
		"sluice_store_call_duration_seconds": "histogram",
		"sluice_store_errors_total":          "counter",
		"sluice_breaker_state":               "gauge",
		"sluice_breaker_transitions_total":   "counter",
		"sluice_script_reloads_total":        "counter",
		"sluice_memstore_evictions_total":    "counter",
	} {
		if types[name] != typ {
			t.Errorf("# TYPE %s = %q, want %q", name, types[name], typ)
		}
	}
}

// TestNoAllocations checks the hot path after warm-up.
func TestNoAllocations(t *testing.T) {
	c, _ := newCollector(t, metrics.Config{MaxRules: 2})
	ctx := context.Background()
	d := sluice.Decision{Rule: "per-ip", Outcome: sluice.OutcomeDenied, Latency: time.Millisecond}
	folded := sluice.Decision{Rule: "f", Outcome: sluice.OutcomeAllowed}
	c.Observe(ctx, sluice.Decision{Rule: "other-rule"})
	c.Observe(ctx, d)
	c.Observe(ctx, folded)
	ok := sluice.StoreCall{Latency: 300 * time.Microsecond, Hits: 3}
	failed := sluice.StoreCall{Latency: 50 * time.Millisecond, Err: fmt.Errorf("x: %w", &sluice.StoreError{Kind: sluice.ErrTimeout, Ambiguous: true, Err: context.DeadlineExceeded})}
	for name, f := range map[string]func(){
		"Observe":                func() { c.Observe(ctx, d) },
		"Observe/folded":         func() { c.Observe(ctx, folded) },
		"ObserveStoreCall/ok":    func() { c.ObserveStoreCall(ctx, ok) },
		"ObserveStoreCall/error": func() { c.ObserveStoreCall(ctx, failed) },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, n)
		}
	}
}

// normalize sorts the labels of a series as the text exposition writes it,
// name{label="value",...}, to match the keys of series. Label values must
// not contain commas.
func normalize(s string) string {
	name, labels, ok := strings.Cut(s, "{")
	if !ok {
		return s
	}
	parts := strings.Split(strings.TrimSuffix(labels, "}"), ",")
	slices.Sort(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}

// Limits requests set for themselves that a rule capped or ignored are
// counted by rule and action, from the rule's first observation.
func TestRequestLimits(t *testing.T) {
	c, reg := newCollector(t, metrics.Config{})
	var o sluice.Observer = c
	rl, ok := o.(sluice.RequestLimitObserver)
	if !ok {
		t.Fatal("the collector is not a sluice.RequestLimitObserver")
	}
	ctx := context.Background()
	rl.ObserveRequestLimit(ctx, sluice.RequestLimitEvent{Rule: "per-tenant", Action: sluice.RequestLimitCapped})
	rl.ObserveRequestLimit(ctx, sluice.RequestLimitEvent{Rule: "per-tenant", Action: sluice.RequestLimitCapped})
	rl.ObserveRequestLimit(ctx, sluice.RequestLimitEvent{Rule: "per-tennant", Action: sluice.RequestLimitUnknownRule})
	want(t, series(t, reg), map[string]float64{
		`sluice_request_limits_total{action="capped",rule="per-tenant"}`:        2,
		`sluice_request_limits_total{action="invalid",rule="per-tenant"}`:       0,
		`sluice_request_limits_total{action="unknown_rule",rule="per-tennant"}`: 1,
	})
}

// A blocked refusal counts under the blocked outcome; the one that
// started its block counts a penalty too, and one answered from memory a
// remembered refusal.
func TestPenaltiesStarted(t *testing.T) {
	c, reg := newCollector(t, metrics.Config{})
	ctx := context.Background()
	c.Observe(ctx, sluice.Decision{Rule: "abusive", Outcome: sluice.OutcomeBlocked, Result: sluice.Result{Blocked: true, BlockStarted: true, RetryAfter: time.Minute}})
	c.Observe(ctx, sluice.Decision{Rule: "abusive", Outcome: sluice.OutcomeBlocked, Result: sluice.Result{Blocked: true, RetryAfter: time.Second}})
	c.Observe(ctx, sluice.Decision{Rule: "abusive", Outcome: sluice.OutcomeBlocked, Result: sluice.Result{Blocked: true, Remembered: true, RetryAfter: time.Second}})
	got := series(t, reg)
	for name, v := range map[string]float64{
		decisions("abusive", "blocked"):                    3,
		decisions("abusive", "denied"):                     0,
		`sluice_penalties_started_total{rule="abusive"}`:   1,
		`sluice_refusals_remembered_total{rule="abusive"}`: 1,
	} {
		if got[name] != v {
			t.Errorf("%s = %v, want %v", name, got[name], v)
		}
	}
}
