package middleware_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
)

// withCost is a middleware in front of the limiter that sets the request's
// cost from a header, as an application might from the request's size.
func withCost(n int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(sluice.WithCost(r.Context(), n)))
		})
	}
}

func serveDirect(h http.Handler) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "192.0.2.9:1000"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestCostFromContext(t *testing.T) {
	store, _ := newMemstore(t)
	set := rules.MustNew(
		rules.Rule{Name: "capped", Key: keyfunc.Global(), Limit: sluice.PerMinute(100), MaxCost: 10},
		rules.Rule{Name: "uncapped", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(100)},
	)
	lim := middleware.Limit(store, set)
	rec := serveDirect(withCost(40)(lim(&okHandler{})))
	if rec.Code != 200 || rec.Header().Get("RateLimit-Policy") == "" {
		t.Fatalf("status %d", rec.Code)
	}
	// capped charged 10 (its MaxCost), uncapped 40: uncapped binds with 60 left.
	if got := rec.Header().Get("RateLimit"); got != `"uncapped";r=60;t=24` {
		t.Fatalf("RateLimit %q", got)
	}
	rec = serveDirect(withCost(0)(lim(&okHandler{})))
	if got := rec.Header().Get("RateLimit"); rec.Code != 200 || got != `"uncapped";r=60;t=24` {
		t.Fatalf("a peek (cost 0) consumed: %d %q", rec.Code, got)
	}
	rec = serveDirect(withCost(-1)(lim(&okHandler{})))
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("negative cost: status %d, want 500", rec.Code)
	}
}

func TestChargeAfterTheFact(t *testing.T) {
	store, _ := newMemstore(t)
	set := rules.MustNew(
		perIP(sluice.PerMinute(10)),
		rules.Rule{Name: "dry", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(10), Shadow: true},
	)
	var chargeErr error
	charge := func(n int64) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			chargeErr = middleware.Charge(r, n)
		})
	}
	lim := middleware.Limit(store, set)
	if rec := serveDirect(lim(charge(4))); rec.Code != 200 || chargeErr != nil {
		t.Fatalf("status %d, Charge: %v", rec.Code, chargeErr)
	}
	// 1 + 4 charged: 5 left.
	if got := serveDirect(lim(&okHandler{})).Header().Get("RateLimit"); got != `"per-ip";r=4;t=36` {
		t.Fatalf("after a charge of 4: RateLimit %q, want r=4 (1+4 charged, then 1 more)", got)
	}
	// Charging more than is left puts the bucket into debt.
	serveDirect(lim(charge(9)))
	rec := serveDirect(lim(&okHandler{}))
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "42" {
		t.Fatalf("after a charge into debt: %d, Retry-After %q; want 429 after 42 s", rec.Code, rec.Header().Get("Retry-After"))
	}
	// The shadow rule was never charged after the fact: 3 taken by passing requests.
	if err := middleware.Charge(httptest.NewRequest(http.MethodGet, "/", nil), 1); !errors.Is(err, middleware.ErrNotLimited) {
		t.Fatalf("Charge outside a limiter: %v", err)
	}
}

func TestChargeSettlesWhenTheHandlerPanics(t *testing.T) {
	store, _ := newMemstore(t)
	lim := middleware.Limit(store, rules.MustNew(perIP(sluice.PerMinute(10))))
	boom := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := middleware.Charge(r, 5); err != nil {
			t.Error(err)
		}
		if err := middleware.Charge(r, -1); err == nil {
			t.Error("a negative charge was accepted")
		}
		panic("handler bug")
	})
	func() {
		defer func() {
			if p := recover(); p != "handler bug" {
				t.Fatalf("recovered %v, want the handler's panic to propagate", p)
			}
		}()
		serveDirect(lim(boom))
	}()
	if got := serveDirect(lim(&okHandler{})).Header().Get("RateLimit"); got != `"per-ip";r=3;t=42` {
		t.Fatalf("after a panicking handler charged 5: RateLimit %q, want r=3 (1+5+1 used)", got)
	}
}

func TestChargeReachesEveryLimiterInTheChain(t *testing.T) {
	store, _ := newMemstore(t)
	outer := middleware.Limit(store, rules.MustNew(rules.Rule{Name: "outer", Key: keyfunc.Global(), Limit: sluice.PerMinute(100)}))
	inner := middleware.Limit(store, rules.MustNew(rules.Rule{Name: "inner", Key: keyfunc.Global(), Limit: sluice.PerMinute(50)}))
	serveDirect(outer(inner(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = middleware.Charge(r, 10)
	}))))
	rec := serveDirect(outer(inner(&okHandler{})))
	if got := rec.Header().Get("RateLimit-Policy"); got != `"outer";q=100;w=60, "inner";q=50;w=60` {
		t.Fatalf("RateLimit-Policy %q", got)
	}
	if got := rec.Header().Get("RateLimit"); got != `"inner";r=38;t=15` {
		t.Fatalf("RateLimit %q, want inner with 38 left (1+10+1 used)", got)
	}
	// The outer rule was charged too: 88 left, checked with a peek.
	peek := serveDirect(withCost(0)(outer(&okHandler{})))
	if got := peek.Header().Get("RateLimit"); got != `"outer";r=88;t=8` {
		t.Fatalf("outer RateLimit %q, want 88 left", got)
	}
}
