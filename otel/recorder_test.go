package sluiceotel_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	sluiceotel "github.com/sluicehq/sluice/otel"
	"github.com/sluicehq/sluice/store/lease"
	"github.com/sluicehq/sluice/store/memstore"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// The hooks a Recorder is attached through.
var (
	_ sluice.Observer             = (*sluiceotel.Recorder)(nil)
	_ sluice.StoreCallObserver    = (*sluiceotel.Recorder)(nil)
	_ sluice.ResetObserver        = (*sluiceotel.Recorder)(nil)
	_ sluice.StoreEvents          = (*sluiceotel.Recorder)(nil)
	_ sluice.StateHealedEvents    = (*sluiceotel.Recorder)(nil)
	_ sluice.EvictionPolicyEvents = (*sluiceotel.Recorder)(nil)
	_ memstore.Events             = (*sluiceotel.Recorder)(nil)
	_ sluice.RequestLimitObserver = (*sluiceotel.Recorder)(nil)
	_ lease.Observer              = (*sluiceotel.Recorder)(nil)
	_ lease.RefundObserver        = (*sluiceotel.Recorder)(nil)
)

// TestInstruments: every instrument is recorded, with its unit, its kind
// and its attributes (the WithAttributes ones on all of them), read back
// through the SDK's manual reader.
func TestInstruments(t *testing.T) {
	rec, reader := newRecorder(t, sluiceotel.WithAttributes(attribute.String("sluice.limiter", "api")))
	ctx := context.Background()
	for _, d := range []sluice.Decision{
		{Rule: "per-ip", Outcome: sluice.OutcomeAllowed},
		{Rule: "per-ip", Outcome: sluice.OutcomeAllowed},
		{Rule: "per-ip", Outcome: sluice.OutcomeDenied, Result: sluice.Result{Remembered: true}},
		{Rule: "per-ip", Outcome: sluice.OutcomeDenied},
		{Rule: "dry-run", Outcome: sluice.OutcomeShadowDenied, Shadow: true},
		{Rule: "per-user", Outcome: sluice.OutcomeFailedOpen},
		{Rule: "per-user", Outcome: sluice.OutcomeFailedClosed},
		{Rule: "per-user", Outcome: sluice.OutcomeLocal},
		{Rule: "office", Outcome: sluice.OutcomeBypassed},
		{Rule: "per-ip", Outcome: sluice.OutcomeBlocked, Result: sluice.Result{Blocked: true, BlockStarted: true}},
		{Rule: "per-ip", Outcome: sluice.OutcomeBlocked, Result: sluice.Result{Blocked: true}},
		{Rule: "per-user", Outcome: sluice.Outcome(200)},
	} {
		rec.Observe(ctx, d)
	}
	rec.ObserveStoreCall(ctx, sluice.StoreCall{Latency: 2 * time.Millisecond, Hits: 2})
	rec.ObserveStoreCall(ctx, sluice.StoreCall{Latency: 50 * time.Millisecond, Hits: 2,
		Err: &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrTimeout, Ambiguous: true}})
	rec.ObserveStoreCall(ctx, sluice.StoreCall{Latency: time.Millisecond, Hits: 1, Err: errors.New("boom")})
	rec.ObserveReset(ctx, "per-ip")
	rec.ObserveRequestLimit(ctx, sluice.RequestLimitEvent{Rule: "per-ip", Action: sluice.RequestLimitCapped})
	rec.ObserveRequestLimit(ctx, sluice.RequestLimitEvent{Rule: "per-ip", Action: sluice.RequestLimitCapped})
	rec.ObserveRequestLimit(ctx, sluice.RequestLimitEvent{Rule: "per-tennant", Action: sluice.RequestLimitUnknownRule})
	rec.BreakerChanged("10.0.0.1:6379", sluice.BreakerClosed, sluice.BreakerOpen)
	rec.ScriptReloaded("10.0.0.1:6379")
	rec.StateHealed("10.0.0.1:6379")
	rec.EvictionPolicyChecked("10.0.0.1:6379", "allkeys-lru", true)
	rec.EvictionPolicyChecked("10.0.0.2:6379", "", false)
	rec.BucketsEvicted(3)
	rec.BucketsEvicted(0)
	rec.LeaseRefilled("per-ip", 10)
	rec.LeaseReturned("per-ip", 4)
	rec.LeaseLost("per-ip", 1)
	rec.RefundFailed("per-ip", 2)
	rec.LeasedKeys(7)
	rec.HotKey("per-ip", true, "lease")
	rec.HotKey("per-ip", true, "lease")
	rec.HotKey("per-ip", false, "lease")

	const api = "sluice.limiter=api"
	want := map[string]expected{
		"sluice.decisions": {"{decision}", "counter", []string{
			api + ",sluice.outcome=allowed,sluice.rule=per-ip: 2",
			api + ",sluice.outcome=blocked,sluice.rule=per-ip: 2",
			api + ",sluice.outcome=bypassed,sluice.rule=office: 1",
			api + ",sluice.outcome=denied,sluice.rule=per-ip: 2",
			api + ",sluice.outcome=failed_closed,sluice.rule=per-user: 1",
			api + ",sluice.outcome=failed_open,sluice.rule=per-user: 1",
			api + ",sluice.outcome=local,sluice.rule=per-user: 1",
			api + ",sluice.outcome=shadow_denied,sluice.rule=dry-run: 1",
			api + ",sluice.outcome=unknown,sluice.rule=per-user: 1",
		}},
		"sluice.refusals.remembered": {"{refusal}", "counter", []string{api + ",sluice.rule=per-ip: 1"}},
		"sluice.penalties.started":   {"{block}", "counter", []string{api + ",sluice.rule=per-ip: 1"}},
		"sluice.store.call.duration": {"s", "histogram", []string{
			"error.type=_OTHER," + api + ": count=1 sum=0.001",
			"error.type=timeout," + api + ": count=1 sum=0.05",
			api + ": count=1 sum=0.002",
		}},
		"sluice.store.errors": {"{error}", "counter", []string{
			"error.type=_OTHER," + api + ",sluice.store.ambiguous=false: 1",
			"error.type=timeout," + api + ",sluice.store.ambiguous=true: 1",
		}},
		"sluice.breaker.state": {"1", "gauge", []string{
			"sluice.breaker.state=closed," + api + ",sluice.store.endpoint=10.0.0.1:6379: 0",
			"sluice.breaker.state=half_open," + api + ",sluice.store.endpoint=10.0.0.1:6379: 0",
			"sluice.breaker.state=open," + api + ",sluice.store.endpoint=10.0.0.1:6379: 1",
		}},
		"sluice.breaker.transitions": {"{transition}", "counter", []string{
			"sluice.breaker.from=closed,sluice.breaker.to=open," + api + ",sluice.store.endpoint=10.0.0.1:6379: 1",
		}},
		"sluice.store.script.reloads": {"{reload}", "counter", []string{api + ",sluice.store.endpoint=10.0.0.1:6379: 1"}},
		"sluice.store.heals":          {"{key}", "counter", []string{api + ",sluice.store.endpoint=10.0.0.1:6379: 1"}},
		"sluice.store.evicting": {"1", "gauge", []string{
			api + ",sluice.store.endpoint=10.0.0.1:6379,sluice.store.eviction_policy=allkeys-lru: 1",
			api + ",sluice.store.endpoint=10.0.0.2:6379,sluice.store.eviction_policy=unknown: -1",
		}},
		"sluice.memstore.evictions": {"{bucket}", "counter", []string{api + ": 3"}},
		"sluice.resets":             {"{bucket}", "counter", []string{api + ",sluice.rule=per-ip: 1"}},
		"sluice.request_limits": {"{limit}", "counter", []string{
			api + ",sluice.request_limit.action=capped,sluice.rule=per-ip: 2",
			api + ",sluice.request_limit.action=unknown_rule,sluice.rule=per-tennant: 1",
		}},
		"sluice.lease.refills":         {"{refill}", "counter", []string{api + ",sluice.rule=per-ip: 1"}},
		"sluice.lease.tokens.refilled": {"{token}", "counter", []string{api + ",sluice.rule=per-ip: 10"}},
		"sluice.lease.tokens.returned": {"{token}", "counter", []string{api + ",sluice.rule=per-ip: 4"}},
		"sluice.lease.tokens.lost":     {"{token}", "counter", []string{api + ",sluice.rule=per-ip: 1"}},
		"sluice.lease.refund_failures": {"{refund}", "counter", []string{api + ",sluice.rule=per-ip: 2"}},
		"sluice.lease.keys":            {"{key}", "gauge", []string{api + ": 7"}},
		"sluice.hot_keys":              {"{key}", "updowncounter", []string{api + ",sluice.rule=per-ip: 1"}},
		"sluice.hot_key.transitions": {"{transition}", "counter", []string{
			"sluice.hot_key.handling=lease,sluice.hot_key.state=cold," + api + ",sluice.rule=per-ip: 1",
			"sluice.hot_key.handling=lease,sluice.hot_key.state=hot," + api + ",sluice.rule=per-ip: 2",
		}},
	}
	got := collect(t, reader)
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s: not recorded", name)
			continue
		}
		if g.unit != w.unit || g.kind != w.kind || !slices.Equal(g.points, w.points) {
			t.Errorf("%s: %s %s\n\t%s\nwant %s %s\n\t%s", name, g.kind, g.unit, strings.Join(g.points, "\n\t"),
				w.kind, w.unit, strings.Join(w.points, "\n\t"))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: recorded, not expected", name)
		}
	}
}

// TestPenaltiesStarted: a blocked refusal counts under the blocked
// outcome; the one that started its block counts in
// sluice.penalties.started too, and one answered from memory in
// sluice.refusals.remembered; a decision of another outcome never counts
// a penalty.
func TestPenaltiesStarted(t *testing.T) {
	rec, reader := newRecorder(t)
	ctx := context.Background()
	for _, d := range []sluice.Decision{
		{Rule: "abusive", Outcome: sluice.OutcomeBlocked, Result: sluice.Result{Blocked: true, BlockStarted: true, RetryAfter: time.Minute}},
		{Rule: "abusive", Outcome: sluice.OutcomeBlocked, Result: sluice.Result{Blocked: true, RetryAfter: time.Second}},
		{Rule: "abusive", Outcome: sluice.OutcomeBlocked, Result: sluice.Result{Blocked: true, Remembered: true, RetryAfter: time.Second}},
		{Rule: "abusive", Outcome: sluice.OutcomeBlocked, Result: sluice.Result{Blocked: true, BlockStarted: true, RetryAfter: time.Minute}},
		{Rule: "other", Outcome: sluice.OutcomeLocal, Result: sluice.Result{Blocked: true, BlockStarted: true}},
		{Rule: "other", Outcome: sluice.OutcomeDenied},
	} {
		rec.Observe(ctx, d)
	}
	got := collect(t, reader)
	for name, want := range map[string][]string{
		"sluice.decisions": {
			"sluice.outcome=blocked,sluice.rule=abusive: 4",
			"sluice.outcome=denied,sluice.rule=other: 1",
			"sluice.outcome=local,sluice.rule=other: 1",
		},
		"sluice.penalties.started":   {"sluice.rule=abusive: 2"},
		"sluice.refusals.remembered": {"sluice.rule=abusive: 1"},
	} {
		if g := got[name]; !slices.Equal(g.points, want) || g.kind != "counter" {
			t.Errorf("%s: %s\n\t%s\nwant counter\n\t%s", name, g.kind, strings.Join(g.points, "\n\t"), strings.Join(want, "\n\t"))
		}
	}
}

// expected is an expected instrument, in the order unit,
// kind, points.
type expected = struct {
	unit, kind string
	points     []string
}

// TestMaxRules: rule names beyond the cap are recorded under OtherRule.
func TestMaxRules(t *testing.T) {
	rec, reader := newRecorder(t, sluiceotel.WithMaxRules(2))
	for _, rule := range []string{"a", "b", "c", "d", "a", "\xff"} {
		rec.Observe(context.Background(), sluice.Decision{Rule: rule, Outcome: sluice.OutcomeAllowed})
	}
	want := []string{
		"sluice.outcome=allowed,sluice.rule=__other__: 3",
		"sluice.outcome=allowed,sluice.rule=a: 2",
		"sluice.outcome=allowed,sluice.rule=b: 1",
	}
	if got := collect(t, reader)["sluice.decisions"].points; !slices.Equal(got, want) {
		t.Errorf("decisions\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSpanEvents: a refusal adds the sluice.refused event to the
// request's recording span, with the rule, the outcome and the retry
// delay; other decisions, non-recording spans and WithoutSpanEvents add
// none.
func TestSpanEvents(t *testing.T) {
	denied := sluice.Decision{Rule: "per-ip", Outcome: sluice.OutcomeDenied,
		Result: sluice.Result{RetryAfter: 1500 * time.Millisecond}}
	tests := []struct {
		name   string
		opts   []sluiceotel.Option
		sample bool
		d      sluice.Decision
		want   string
	}{
		{"denied", nil, true, denied, "sluice.refused{sluice.rule=per-ip sluice.outcome=denied sluice.retry_after=1.5}"},
		{"failed closed", nil, true, sluice.Decision{Rule: "r", Outcome: sluice.OutcomeFailedClosed},
			"sluice.refused{sluice.rule=r sluice.outcome=failed_closed}"},
		{"refused by the local fallback", nil, true,
			sluice.Decision{Rule: "r", Outcome: sluice.OutcomeLocal, Result: sluice.Result{RetryAfter: time.Second}},
			"sluice.refused{sluice.rule=r sluice.outcome=local sluice.retry_after=1}"},
		{"unsatisfiable", nil, true,
			sluice.Decision{Rule: "r", Outcome: sluice.OutcomeDenied, Result: sluice.Result{Unsatisfiable: true}},
			"sluice.refused{sluice.rule=r sluice.outcome=denied}"},
		{"allowed", nil, true, sluice.Decision{Rule: "r", Outcome: sluice.OutcomeAllowed, Result: sluice.Result{Allowed: true}}, ""},
		{"allowed by the local fallback", nil, true,
			sluice.Decision{Rule: "r", Outcome: sluice.OutcomeLocal, Result: sluice.Result{Allowed: true}}, ""},
		{"shadow", nil, true, sluice.Decision{Rule: "r", Outcome: sluice.OutcomeShadowDenied, Shadow: true}, ""},
		{"span not recording", nil, false, denied, ""},
		{"without span events", []sluiceotel.Option{sluiceotel.WithoutSpanEvents()}, true, denied, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, _ := newRecorder(t, tt.opts...)
			spans := tracetest.NewSpanRecorder()
			sampler := sdktrace.NeverSample()
			if tt.sample {
				sampler = sdktrace.AlwaysSample()
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans), sdktrace.WithSampler(sampler))
			defer func() { _ = tp.Shutdown(context.Background()) }()
			ctx, span := tp.Tracer("test").Start(context.Background(), "request")
			rec.Observe(ctx, tt.d)
			span.End()
			var got []string
			for _, s := range spans.Ended() {
				for _, e := range s.Events() {
					var kv []string
					for _, a := range e.Attributes {
						kv = append(kv, string(a.Key)+"="+a.Value.String())
					}
					got = append(got, e.Name+"{"+strings.Join(kv, " ")+"}")
				}
			}
			if strings.Join(got, ";") != tt.want {
				t.Errorf("events %q, want %q", got, tt.want)
			}
		})
	}
	// No span at all: nothing happens, nothing panics.
	rec, _ := newRecorder(t)
	rec.Observe(context.Background(), denied)
}

// TestNew: New refuses a nil provider and invalid options with errors
// wrapping sluice.ErrInvalidConfig.
func TestNew(t *testing.T) {
	tests := []struct {
		name string
		opts []sluiceotel.Option
		want string
	}{
		{"nil option", []sluiceotel.Option{nil}, "sluiceotel: nil Option"},
		{"own attribute", []sluiceotel.Option{sluiceotel.WithAttributes(attribute.String("sluice.rule", "x"))},
			`sluiceotel: WithAttributes: "sluice.rule" is an attribute of sluice's instruments`},
		{"invalid attribute", []sluiceotel.Option{sluiceotel.WithAttributes(attribute.String("", "x"))},
			`sluiceotel: WithAttributes: invalid attribute ""`},
		{"no buckets", []sluiceotel.Option{sluiceotel.WithBuckets()}, "sluiceotel: WithBuckets: no boundaries"},
		{"buckets not increasing", []sluiceotel.Option{sluiceotel.WithBuckets(0.1, 0.1)},
			"sluiceotel: WithBuckets: boundaries not strictly increasing at 0.1"},
		{"no rules", []sluiceotel.Option{sluiceotel.WithMaxRules(0)},
			"sluiceotel: WithMaxRules: 0: give a positive cap, or a negative value for none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := sluiceotel.New(noop.NewMeterProvider(), tt.opts...)
			if rec != nil || !errors.Is(err, sluice.ErrInvalidConfig) || err.Error() != tt.want {
				t.Fatalf("New = %v, %v; want %q wrapping ErrInvalidConfig", rec, err, tt.want)
			}
		})
	}
	if _, err := sluiceotel.New(nil); !errors.Is(err, sluice.ErrInvalidConfig) {
		t.Errorf("New(nil) = %v", err)
	}
}

// TestErrorType: store errors are typed by their sentinel, never by their
// message.
func TestErrorType(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&sluice.StoreError{Kind: sluice.ErrTimeout}, "timeout"},
		{&sluice.StoreError{Kind: sluice.ErrProcessSlow, Err: &sluice.StoreError{Kind: sluice.ErrTimeout}}, "process_slow"},
		{&sluice.StoreError{Kind: sluice.ErrUnavailable, Err: context.DeadlineExceeded}, "unavailable"},
		{&sluice.StoreError{Kind: sluice.ErrClusterDown}, "cluster_down"},
		{&sluice.StoreError{Kind: sluice.ErrBreakerOpen}, "breaker_open"},
		{&sluice.StoreError{Kind: sluice.ErrScriptMissing}, "script_missing"},
		{&sluice.StoreError{Kind: sluice.ErrCorruptState}, "corrupt_state"},
		{sluice.ErrClosed, "closed"},
		{sluice.ErrInvalidHit, "invalid"},
		{&sluice.PartialError{Failed: []int{0}, Err: &sluice.StoreError{Kind: sluice.ErrTimeout}}, "timeout"},
		{context.DeadlineExceeded, "timeout"},
		{context.Canceled, "canceled"},
		{errors.New("timeout"), "_OTHER"},
		{nil, "_OTHER"},
	}
	for _, tt := range tests {
		if got := sluiceotel.ErrorType(tt.err); got != tt.want {
			t.Errorf("ErrorType(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
