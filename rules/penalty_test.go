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

// A rule's penalty is checked at construction, field by field, and its
// hits carry it.
func TestPenaltyRules(t *testing.T) {
	rule := rules.Rule{Name: "abusive-clients", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(100), Penalty: &rules.Penalty{Block: 15 * time.Minute}}
	for _, tc := range []struct {
		name string
		edit func(r *rules.Rule)
		want string // "" for valid
	}{
		{"valid", func(*rules.Rule) {}, ""},
		{"after", func(r *rules.Rule) { r.Penalty = &rules.Penalty{Block: time.Hour, After: 5} }, ""},
		{"no block", func(r *rules.Rule) { r.Penalty = &rules.Penalty{After: 2} }, "penalty.block: a penalty needs a positive block"},
		{"over 30 days", func(r *rules.Rule) { r.Penalty = &rules.Penalty{Block: sluice.MaxBlock + time.Hour} }, "penalty.block: 721h0m0s is over the longest block"},
		{"negative after", func(r *rules.Rule) { r.Penalty = &rules.Penalty{Block: time.Hour, After: -1} }, "penalty.after: -1: at least 1"},
		{"shadow", func(r *rules.Rule) { r.Shadow = true }, "penalty: a shadow rule never refuses"},
		{"sliding log", func(r *rules.Rule) { r.Algorithm = sluice.SlidingLog }, "penalty: not with the sliding_log algorithm"},
	} {
		r := rule
		tc.edit(&r)
		err := r.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.Is(err, rules.ErrInvalidRule) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"abusive-clients"`)):
			t.Errorf("%s: %v, want an error naming the rule and %q", tc.name, err, tc.want)
		}
	}
	rule.Penalty.After = 3
	plain := rules.Rule{Name: "plain", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(100)}
	set := rules.MustNew(rule, plain)
	var m rules.Matched
	if err := set.Resolve(httptest.NewRequest("GET", "/", nil), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Hits) != 2 || m.Hits[0].Block != 15*time.Minute || m.Hits[0].After != 3 || m.Hits[1].Block != 0 || m.Hits[1].After != 0 {
		t.Fatalf("hits %+v, want the penalty on the first only", m.Hits)
	}
}
