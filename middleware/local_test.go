package middleware_test

import (
	"github.com/sluicehq/sluice/decide"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
)

var down = &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrUnavailable}

func TestLocalFallbackDecidesOnItsShare(t *testing.T) {
	rec := newRecorder()
	set := rules.MustNew(
		rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(10), OnFail: rules.FailLocal},
		rules.Rule{Name: "global", Key: keyfunc.Global(), Limit: sluice.PerMinute(5), OnFail: rules.FailOpen},
	)
	h := middleware.Limit(failingStore{down}, set, decide.WithInstances(5), decide.WithObserver(rec), decide.WithLogger(quietLogger()))(&okHandler{})
	// 10 per minute over 5 instances: 2 per minute here.
	for i, want := range []int{200, 200, 429} {
		r := serveDirect(h)
		if r.Code != want {
			t.Fatalf("request %d: %d, want %d", i, r.Code, want)
		}
		if r.Header().Get("RateLimit") != "" || r.Header().Get("RateLimit-Policy") != "" {
			t.Fatalf("a rule decided by on_fail appeared in the headers: %v", r.Header())
		}
		if want == 429 && r.Header().Get("Retry-After") != "30" {
			t.Fatalf("Retry-After %q, want 30 (one of 2 per minute)", r.Header().Get("Retry-After"))
		}
	}
	counts := map[string]map[sluice.Outcome]int{}
	for _, d := range rec.drain() {
		if counts[d.Rule] == nil {
			counts[d.Rule] = map[sluice.Outcome]int{}
		}
		counts[d.Rule][d.Outcome]++
	}
	if counts["per-ip"][sluice.OutcomeLocal] != 3 || counts["global"][sluice.OutcomeFailedOpen] != 3 {
		t.Fatalf("observed %v", counts)
	}
}

func TestMixedPoliciesOnFailure(t *testing.T) {
	local := rules.Rule{Name: "local", Key: keyfunc.Global(), Limit: sluice.PerMinute(1), OnFail: rules.FailLocal}
	open := rules.Rule{Name: "open", Key: keyfunc.Global(), Limit: sluice.PerMinute(1), OnFail: rules.FailOpen}
	closed := rules.Rule{Name: "closed", Key: keyfunc.Global(), Limit: sluice.PerMinute(1), OnFail: rules.FailClosed}
	cases := []struct {
		name  string
		rules []rules.Rule
		want  []int
	}{
		{"closed wins", []rules.Rule{local, open, closed}, []int{503, 503}},
		{"local decides, open allows", []rules.Rule{local, open}, []int{200, 429}},
		{"open only", []rules.Rule{open}, []int{200, 200}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := middleware.Limit(failingStore{down}, rules.MustNew(tc.rules...), decide.WithLogger(quietLogger()))(&okHandler{})
			for i, want := range tc.want {
				if got := serveDirect(h).Code; got != want {
					t.Fatalf("request %d: %d, want %d", i, got, want)
				}
			}
		})
	}
	if _, err := middleware.New(failingStore{down}, rules.MustNew(open), decide.WithInstances(0)); err == nil {
		t.Fatal("WithInstances(0) accepted")
	}
}
