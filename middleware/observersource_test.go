package middleware_test

import (
	"github.com/sluicehq/sluice/decide"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
)

// observedStore is a store whose configuration names an observer, as a
// redisstore.Store with a metrics.Collector in Config.Events does.
type observedStore struct {
	sluice.Store
	obs sluice.Observer
}

func (s observedStore) Observer() sluice.Observer { return s.obs }

// Metrics attach in one place: the store's observer sees the decisions
// unless the middleware is given one of its own.
func TestStoreSuppliesTheObserver(t *testing.T) {
	mem, _ := newMemstore(t)
	set := rules.MustNew(perIP(sluice.PerMinute(1)))
	cases := []struct {
		name          string
		opts          func(own *recorder) []middleware.Option
		store, ownGot int
	}{
		{"store_only", func(*recorder) []middleware.Option { return nil }, 2, 0},
		{"explicit_wins", func(own *recorder) []middleware.Option { return []middleware.Option{decide.WithObserver(own)} }, 0, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fromStore, own := newRecorder(), newRecorder()
			store := observedStore{Store: mem, obs: fromStore}
			h := middleware.Limit(store, set, tc.opts(own)...)(&okHandler{})
			for range 2 {
				r := httptest.NewRequest("GET", "/", nil)
				r.RemoteAddr = "192.0.2.1:1"
				if tc.name == "explicit_wins" {
					r.RemoteAddr = "192.0.2.2:1" // a bucket of its own
				}
				h.ServeHTTP(httptest.NewRecorder(), r)
			}
			got, gotOwn := fromStore.drain(), own.drain()
			if len(got) != tc.store || len(gotOwn) != tc.ownGot {
				t.Fatalf("store's observer saw %d decisions, the option's %d; want %d, %d", len(got), len(gotOwn), tc.store, tc.ownGot)
			}
			all := append(got, gotOwn...)
			if all[0].Outcome != sluice.OutcomeAllowed || all[1].Outcome != sluice.OutcomeDenied {
				t.Fatalf("outcomes %v, %v; want allowed, denied", all[0].Outcome, all[1].Outcome)
			}
		})
	}
}
