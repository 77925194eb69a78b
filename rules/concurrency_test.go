package rules_test

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
)

// A concurrency rule is checked at construction, field by field, and its
// hits take one slot of its max (or an override's) whatever the request's
// cost or limit.
func TestConcurrencyRules(t *testing.T) {
	rule := rules.Rule{Name: "reports-in-flight", Key: keyfunc.ClientIP(), Concurrency: &rules.Concurrency{Max: 5, Hold: time.Minute}}
	for _, tc := range []struct {
		name string
		edit func(r *rules.Rule)
		want string // "" for valid
	}{
		{"valid", func(*rules.Rule) {}, ""},
		{"override", func(r *rules.Rule) {
			r.Overrides = []rules.Override{{Identities: []string{"192.0.2.1"}, Limit: sluice.Per(20, time.Minute)}}
		}, ""},
		{"filled in", func(r *rules.Rule) { r.Limit, r.Algorithm = sluice.Per(5, time.Minute), sluice.SlidingLog }, ""},
		{"max 0", func(r *rules.Rule) { r.Concurrency = &rules.Concurrency{Hold: time.Minute} }, "concurrency.max: 0: at least 1"},
		{"max over", func(r *rules.Rule) { r.Concurrency = &rules.Concurrency{Max: 1001, Hold: time.Minute} }, "concurrency.max: 1001 is over"},
		{"hold under a second", func(r *rules.Rule) { r.Concurrency = &rules.Concurrency{Max: 5, Hold: 999 * time.Millisecond} }, "concurrency.hold: 999ms: from 1s to 24h0m0s"},
		{"hold over a day", func(r *rules.Rule) { r.Concurrency = &rules.Concurrency{Max: 5, Hold: 25 * time.Hour} }, "concurrency.hold: 25h0m0s"},
		{"limit", func(r *rules.Rule) { r.Limit = sluice.PerMinute(6) }, "limit: not with concurrency"},
		{"algorithm", func(r *rules.Rule) { r.Algorithm = sluice.FixedWindow }, "algorithm: not with concurrency"},
		{"cost", func(r *rules.Rule) { r.Cost = 2 }, "cost: not with concurrency"},
		{"max cost", func(r *rules.Rule) { r.MaxCost = 2 }, "max_cost: not with concurrency"},
		{"lease", func(r *rules.Rule) { r.Lease.Enabled = true }, "lease: not with concurrency"},
		{"colocate", func(r *rules.Rule) { r.Colocate = keyfunc.Header("X-User") }, "colocate: "},
		{"shadow", func(r *rules.Rule) { r.Shadow = true }, "shadow: not with concurrency"},
		{"count", func(r *rules.Rule) { r.Count = &rules.Count{} }, "count: not with concurrency"},
		{"penalty", func(r *rules.Rule) { r.Penalty = &rules.Penalty{Block: time.Hour} }, "penalty: not with concurrency"},
		{"override of another hold", func(r *rules.Rule) {
			r.Overrides = []rules.Override{{Identities: []string{"192.0.2.1"}, Limit: sluice.Per(20, time.Hour)}}
		}, "overrides[0].limit: 20/1h: an override of a concurrency rule replaces its max"},
	} {
		r := rule
		tc.edit(&r)
		err := r.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.Is(err, rules.ErrInvalidRule) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"reports-in-flight"`)):
			t.Errorf("%s: %v, want an error naming the rule and %q", tc.name, err, tc.want)
		}
	}
	rule.Overrides = []rules.Override{{Identities: []string{"192.0.2.1"}, Limit: sluice.Per(20, time.Minute)}}
	plain := rules.Rule{Name: "plain", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(100)}
	set := rules.MustNew(rule, plain)
	if again, err := rules.New(set.Rules()...); err != nil || again.Len() != 2 {
		t.Fatalf("New of a set's own rules: %v", err)
	}
	for _, tc := range []struct {
		addr string
		max  int64
	}{{"192.0.2.1:1234", 20}, {"192.0.2.2:1234", 5}} {
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = tc.addr
		req = req.WithContext(sluice.WithCost(req.Context(), 3))
		var m rules.Matched
		if err := set.Resolve(req, &m); err != nil {
			t.Fatal(err)
		}
		want := sluice.Hit{Key: m.Hits[0].Key, Limit: sluice.Per(tc.max, time.Minute), Algorithm: sluice.SlidingLog, Cost: 1, Concurrency: true}
		if len(m.Hits) != 2 || m.Hits[0] != want || m.Hits[1].Concurrency || m.Hits[1].Cost != 3 {
			t.Fatalf("%s: hits %+v, want a slot of %d (%+v), and a plain hit of cost 3", tc.addr, m.Hits, tc.max, want)
		}
		if err := m.Hits[0].Check(); err != nil {
			t.Fatalf("%s: the slot's hit: %v", tc.addr, err)
		}
	}
}
