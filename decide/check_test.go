package decide_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// fieldNames returns the names of fields, in order.
func fieldNames(fields []headers.Field) string {
	var names []string
	for _, f := range fields {
		names = append(names, f.Name)
	}
	return strings.Join(names, " ")
}

// TestCheck: what an outcome carries for each verdict: the policies, the
// binding one, the fields, the retry delay and the error.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	mem := func() sluice.Store {
		return memstore.New(memstore.Config{Clock: storetest.NewClock(time.Unix(1_700_000_000, 0))})
	}
	perMin := rules.Rule{Name: "per-min", Key: keyfunc.Global(), Limit: sluice.PerMinute(1)}
	hidden := rules.Rule{Name: "hidden", Key: keyfunc.Global(), Limit: sluice.PerMinute(5), Hidden: true}
	apiKey := rules.Rule{Name: "api", Key: keyfunc.Header("X-API-Key").Required(), Limit: sluice.PerMinute(5)}
	closed := perMin
	closed.OnFail = rules.FailClosed
	prior := []headers.Policy{{Name: "outer", Result: sluice.Result{Allowed: true, Limit: sluice.PerMinute(9), Remaining: 8}}}
	tests := []struct {
		name     string
		store    func() sluice.Store
		rules    []rules.Rule
		ctx      context.Context
		requests int
		prior    []headers.Policy
		verdict  decide.Verdict
		policies string // names, binding one starred
		fields   string
		retry    time.Duration
		err      error
	}{
		{name: "admitted", store: mem, rules: []rules.Rule{perMin, hidden}, requests: 1,
			verdict: decide.Admitted, policies: "per-min*", fields: "Ratelimit-Policy Ratelimit"},
		{name: "admitted after others", store: mem, rules: []rules.Rule{perMin}, requests: 1, prior: prior,
			verdict: decide.Admitted, policies: "outer per-min*", fields: "Ratelimit-Policy Ratelimit"},
		{name: "refused", store: mem, rules: []rules.Rule{perMin, hidden}, requests: 2,
			verdict: decide.Refused, policies: "per-min*", fields: "Ratelimit-Policy Ratelimit Retry-After", retry: time.Minute},
		{name: "unsatisfiable", store: mem, rules: []rules.Rule{perMin}, requests: 1, ctx: sluice.WithCost(ctx, 2),
			verdict: decide.Refused, policies: "per-min*", fields: "Ratelimit-Policy Ratelimit"},
		{name: "unavailable", store: func() sluice.Store { return failingStore{down(3 * time.Second)} }, rules: []rules.Rule{closed}, requests: 1,
			verdict: decide.Unavailable, fields: "Retry-After", retry: 3 * time.Second, err: decide.ErrStoreFailed},
		{name: "open", store: func() sluice.Store { return failingStore{down(0)} }, rules: []rules.Rule{hidden}, requests: 1,
			verdict: decide.Admitted, err: decide.ErrStoreFailed},
		{name: "no key", store: mem, rules: []rules.Rule{apiKey}, requests: 1,
			verdict: decide.Invalid, err: decide.ErrKeyFailed},
		{name: "negative cost", store: mem, rules: []rules.Rule{perMin}, requests: 1, ctx: sluice.WithCost(ctx, -1),
			verdict: decide.Invalid, err: decide.ErrInvalidCost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc, err := decide.New(tt.store(), quiet)
			if err != nil {
				t.Fatal(err)
			}
			set := rules.MustNew(tt.rules...)
			rctx := tt.ctx
			if rctx == nil {
				rctx = ctx
			}
			var o *decide.Outcome
			for range tt.requests {
				if o != nil {
					o.Finish(ctx, 0)
				}
				o = dc.Check(set, httptest.NewRequestWithContext(rctx, "GET", "/", nil), tt.prior)
			}
			defer o.Finish(ctx, 0)
			var policies []string
			for i, p := range o.Policies {
				if i == o.Binding {
					p.Name += "*"
				}
				policies = append(policies, p.Name)
			}
			if o.Verdict != tt.verdict || strings.Join(policies, " ") != tt.policies || fieldNames(o.Fields) != tt.fields ||
				o.RetryAfter.Round(time.Second) != tt.retry || !errors.Is(o.Err, tt.err) || (tt.err == nil) != (o.Err == nil) {
				t.Errorf("got %v, policies %q, fields %q, retry %v, err %v; want %v, %q, %q, %v, %v",
					o.Verdict, policies, fieldNames(o.Fields), o.RetryAfter, o.Err, tt.verdict, tt.policies, tt.fields, tt.retry, tt.err)
			}
		})
	}
}

// TestViolated: the exposed rules that refused the request, in order.
func TestViolated(t *testing.T) {
	mem := memstore.New(memstore.Config{Clock: storetest.NewClock(time.Unix(1_700_000_000, 0))})
	dc, err := decide.New(mem, quiet)
	if err != nil {
		t.Fatal(err)
	}
	set := rules.MustNew(
		rules.Rule{Name: "a", Key: keyfunc.Global(), Limit: sluice.PerMinute(1)},
		rules.Rule{Name: "hidden", Key: keyfunc.Global(), Limit: sluice.PerMinute(1), Hidden: true},
		rules.Rule{Name: "roomy", Key: keyfunc.Global(), Limit: sluice.PerMinute(9)},
		rules.Rule{Name: "b", Key: keyfunc.Global(), Limit: sluice.PerMinute(1)},
	)
	dc.Check(set, httptest.NewRequest("GET", "/", nil), nil).Finish(context.Background(), 0)
	o := dc.Check(set, httptest.NewRequest("GET", "/", nil), nil)
	defer o.Finish(context.Background(), 0)
	var got []string
	for rule := range o.Violated() {
		got = append(got, rule.Name)
	}
	if o.Verdict != decide.Refused || strings.Join(got, " ") != "a b" {
		t.Errorf("%v, violated %q, want refused by a b", o.Verdict, got)
	}
}

// TestFinishCharges: Finish charges what came after the fact to the
// request's enforcing rules, not its shadow ones.
func TestFinishCharges(t *testing.T) {
	mem := memstore.New(memstore.Config{Clock: storetest.NewClock(time.Unix(1_700_000_000, 0))})
	dc, err := decide.New(mem, quiet)
	if err != nil {
		t.Fatal(err)
	}
	set := rules.MustNew(
		rules.Rule{Name: "enforced", Key: keyfunc.Global(), Limit: sluice.PerMinute(10)},
		rules.Rule{Name: "shadow", Key: keyfunc.Global(), Limit: sluice.PerMinute(10), Shadow: true},
	)
	ctx := context.Background()
	dc.Check(set, httptest.NewRequest("GET", "/", nil), nil).Finish(ctx, 4)
	o := dc.Check(set, httptest.NewRequest("GET", "/", nil), nil)
	defer o.Finish(ctx, 0)
	if o.Results[0].Remaining != 10-1-4-1 || o.Results[1].Remaining != 10-1-1 {
		t.Errorf("remaining %d and %d, want 4 (charged) and 8 (shadow, not charged)", o.Results[0].Remaining, o.Results[1].Remaining)
	}
}

// TestRefuse: Refuse turns an admitted request that a rule refuses, such
// as one of peeks only, into a refusal with a refusal's fields; it leaves
// one no rule refuses.
func TestRefuse(t *testing.T) {
	mem := memstore.New(memstore.Config{Clock: storetest.NewClock(time.Unix(1_700_000_000, 0))})
	dc, err := decide.New(mem, quiet)
	if err != nil {
		t.Fatal(err)
	}
	set := rules.MustNew(rules.Rule{Name: "a", Key: keyfunc.Global(), Limit: sluice.PerMinute(1)})
	ctx := context.Background()
	peek := func() *decide.Outcome {
		return dc.Check(set, httptest.NewRequestWithContext(sluice.WithCost(ctx, 0), "GET", "/", nil), nil)
	}
	o := peek()
	o.Refuse()
	if o.Verdict != decide.Admitted || fieldNames(o.Fields) != "Ratelimit-Policy Ratelimit" {
		t.Errorf("a peek that passes: %v, fields %q, want admitted", o.Verdict, fieldNames(o.Fields))
	}
	o.Finish(ctx, 0)
	dc.Check(set, httptest.NewRequest("GET", "/", nil), nil).Finish(ctx, 0)
	o = peek()
	defer o.Finish(ctx, 0)
	if o.Verdict != decide.Admitted {
		t.Fatalf("a peek is %v, want admitted", o.Verdict)
	}
	o.Refuse()
	if o.Verdict != decide.Refused || o.RetryAfter.Round(time.Second) != time.Minute || fieldNames(o.Fields) != "Ratelimit-Policy Ratelimit Retry-After" {
		t.Errorf("refused peek: %v, retry %v, fields %q", o.Verdict, o.RetryAfter, fieldNames(o.Fields))
	}
}

type frontEndConfig struct{ name string }

type otherConfig struct{}

// TestNewFrontEnd: a front end's options set its configuration; options of
// another front end, and of any front end given to New, are refused, and
// errors name the front end's package.
func TestNewFrontEnd(t *testing.T) {
	mem := memstore.New(memstore.Config{})
	name := func(n string) decide.Option {
		return decide.Setting(func(c *frontEndConfig) error {
			if n == "" {
				return errors.New("WithName: empty name")
			}
			c.name = n
			return nil
		})
	}
	var cfg frontEndConfig
	if _, err := decide.NewFrontEnd("front", mem, &cfg, []decide.Option{quiet, name("x")}); err != nil || cfg.name != "x" {
		t.Fatalf("NewFrontEnd = %v, name %q", err, cfg.name)
	}
	other := decide.Setting(func(*otherConfig) error { return nil })
	for _, tt := range []struct {
		opts []decide.Option
		want string
	}{
		{[]decide.Option{name("")}, "front: WithName: empty name"},
		{[]decide.Option{decide.WithBudget(-1)}, "front: WithBudget: -1ns: must be positive"},
		{[]decide.Option{other}, "front: an option of another front end"},
		{[]decide.Option{nil}, "front: nil Option"},
	} {
		_, err := decide.NewFrontEnd("front", mem, &cfg, tt.opts)
		if !errors.Is(err, sluice.ErrInvalidConfig) || err.Error() != tt.want {
			t.Errorf("got %v, want %q wrapping ErrInvalidConfig", err, tt.want)
		}
	}
	if _, err := decide.New(mem, name("x")); !errors.Is(err, sluice.ErrInvalidConfig) || !strings.HasPrefix(err.Error(), "decide: ") {
		t.Errorf("New with a front end's option: %v", err)
	}
}
