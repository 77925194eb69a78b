package middleware_test

import (
	"context"
	"github.com/sluicehq/sluice/decide"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
)

// deadlineStore records the deadline of each call's context and decides on
// a memstore. It is not a memstore itself, so its calls get the budget.
type deadlineStore struct {
	sluice.Store
	mu        sync.Mutex
	deadlines []time.Duration // time left at the call; -1 for none
}

func (s *deadlineStore) Take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	left := time.Duration(-1)
	if d, ok := ctx.Deadline(); ok {
		left = time.Until(d)
	}
	s.mu.Lock()
	s.deadlines = append(s.deadlines, left)
	s.mu.Unlock()
	return s.Store.Take(ctx, hits, out)
}

// callWatcher is a StoreCallObserver that records the context it is given.
type callWatcher struct {
	mu        sync.Mutex
	errs      []error
	vals      []any
	deadlines []bool
}

type requestKey struct{}

func (w *callWatcher) Observe(context.Context, sluice.Decision) {}
func (w *callWatcher) ObserveStoreCall(ctx context.Context, _ sluice.StoreCall) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, ctx.Err())
	w.vals = append(w.vals, ctx.Value(requestKey{}))
	_, ok := ctx.Deadline()
	w.deadlines = append(w.deadlines, ok)
}

// TestStoreCallsGetTheBudget checks that a store call's context carries the
// latency budget as its deadline, and that the store-call observer is given
// the request's context, live and without a deadline (the request has
// none), rather than the call's.
func TestStoreCallsGetTheBudget(t *testing.T) {
	const budget = 40 * time.Second // far from anything a slow machine could eat
	mem, _ := newMemstore(t)
	store, watch := &deadlineStore{Store: mem}, &callWatcher{}
	h := middleware.Limit(store, rules.MustNew(perIP(sluice.PerMinute(100))),
		decide.WithBudget(budget), decide.WithObserver(watch))(&okHandler{})
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req = req.WithContext(context.WithValue(req.Context(), requestKey{}, "this request"))
	h.ServeHTTP(httptest.NewRecorder(), req)

	if len(store.deadlines) != 1 || store.deadlines[0] <= budget-10*time.Second || store.deadlines[0] > budget {
		t.Errorf("time left at the store call: %v, want a deadline just under the %v budget", store.deadlines, budget)
	}
	if len(watch.errs) != 1 || watch.errs[0] != nil || watch.vals[0] != "this request" || watch.deadlines[0] {
		t.Errorf("store-call observer saw context errors %v, values %v and deadlines %v, want the live request context",
			watch.errs, watch.vals, watch.deadlines)
	}
}
