package middleware_test

import (
	"context"
	"github.com/sluicehq/sluice/decide"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
)

// partialStore decides on a memstore every hit but those whose key
// contains "down", which fail, while failing is set, with a partial
// failure (see sluice.PartialTaker).
type partialStore struct {
	*memstore.Store
	failing atomic.Bool
	refunds atomic.Int64 // refunds asked for
	takes   atomic.Int64 // calls of Take, which the middleware must not make
}

func (s *partialStore) Take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	s.takes.Add(1)
	return s.Store.Take(ctx, hits, out)
}

func (s *partialStore) TakePartial(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	if !s.failing.Load() {
		return s.Store.Take(ctx, hits, out)
	}
	var up []sluice.Hit
	var idx, failed []int
	for i := range hits {
		if strings.Contains(hits[i].Key, "down") {
			failed = append(failed, i)
			continue
		}
		up = append(up, hits[i])
		idx = append(idx, i)
	}
	res := make([]sluice.Result, len(up))
	if err := s.Store.Take(ctx, up, res); err != nil {
		return err
	}
	for j, i := range idx {
		out[i] = res[j]
	}
	return &sluice.PartialError{Failed: failed, Err: down}
}

func (s *partialStore) Refund(ctx context.Context, refunds []sluice.Refund) error {
	s.refunds.Add(int64(len(refunds)))
	return s.Store.Refund(ctx, refunds)
}

func TestPartialFailureFailsOnlyTheFailedRules(t *testing.T) {
	rule := func(name string, onFail rules.OnFail) rules.Rule {
		return rules.Rule{Name: name, Key: keyfunc.Global(), Limit: sluice.PerMinute(100), OnFail: onFail}
	}
	cases := []struct {
		name   string
		down   rules.Rule
		upRate int64 // the decided rule's limit per minute
		// want: the statuses of two requests while "down" fails, then of
		// two more once it answers again.
		want     [4]int
		outcomes map[string]sluice.Outcome // of the first request
		refunds  int64                     // refunds the middleware asked for
	}{
		{"open failed, decided allows then refuses", rule("down-open", rules.FailOpen), 1, [4]int{200, 429, 429, 429},
			map[string]sluice.Outcome{"down-open": sluice.OutcomeFailedOpen, "up": sluice.OutcomeAllowed}, 0},
		{"closed failed: decided takes given back", rule("down-closed", rules.FailClosed), 1, [4]int{503, 503, 200, 429},
			map[string]sluice.Outcome{"down-closed": sluice.OutcomeFailedClosed, "up": sluice.OutcomeAllowed}, 2},
		{"local failed refuses: decided takes given back", rules.Rule{Name: "down-local", Key: keyfunc.Global(), Limit: sluice.PerMinute(1), OnFail: rules.FailLocal},
			100, [4]int{200, 429, 200, 429},
			map[string]sluice.Outcome{"down-local": sluice.OutcomeLocal, "up": sluice.OutcomeAllowed}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := rules.Rule{Name: "up", Key: keyfunc.Global(), Limit: sluice.PerMinute(tc.upRate)}
			mem, _ := newMemstore(t)
			store := &partialStore{Store: mem}
			store.failing.Store(true)
			rec := newRecorder()
			h := middleware.Limit(store, rules.MustNew(tc.down, up), decide.WithObserver(rec), decide.WithLogger(quietLogger()))(&okHandler{})
			for i, want := range tc.want {
				if i == 2 {
					store.failing.Store(false)
				}
				r := serveDirect(h)
				if r.Code != want {
					t.Fatalf("request %d: %d, want %d", i, r.Code, want)
				}
				policy := r.Header().Get("RateLimit-Policy")
				if i < 2 && strings.Contains(policy, "down") {
					t.Fatalf("request %d: a failed rule in the headers: %q", i, policy)
				}
				if i < 2 && r.Code != 503 && (tc.upRate == 1 || r.Code == 200) && !strings.Contains(policy, `"up"`) {
					t.Fatalf("request %d: the decided rule missing from the headers: %q", i, policy)
				}
				if i == 0 {
					got := map[string]sluice.Outcome{}
					for _, d := range rec.drain() {
						got[d.Rule] = d.Outcome
						if (d.Err != nil) != (d.Rule != "up") {
							t.Fatalf("rule %s observed with error %v", d.Rule, d.Err)
						}
					}
					for name, o := range tc.outcomes {
						if got[name] != o {
							t.Fatalf("outcomes %v, want %v", got, tc.outcomes)
						}
					}
				}
			}
			if n := store.refunds.Load(); n != tc.refunds {
				t.Fatalf("%d refunds, want %d", n, tc.refunds)
			}
			if n := store.takes.Load(); n != 0 {
				t.Fatalf("%d calls of Take, want TakePartial only", n)
			}
		})
	}
}
