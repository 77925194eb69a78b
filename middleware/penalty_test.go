package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
)

// A rule's penalty through the middleware on a fake clock: the refusal
// that starts the block answers 429 with Retry-After the whole block, and
// the observer sees it as blocked (the block started); later requests are
// refused with the time left, once the bucket has refilled too; another
// client passes; the block ends on time.
func TestPenaltyThroughMiddleware(t *testing.T) {
	mem, clock := newMemstore(t)
	rule := perIP(sluice.PerMinute(2))
	rule.Penalty = &rules.Penalty{Block: 15 * time.Minute}
	obs := newRecorder()
	h := middleware.Limit(mem, rules.MustNew(rule), decide.WithObserver(obs))(&okHandler{})
	send := func(addr string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = addr + ":1"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, tc := range []struct {
		after   time.Duration // since the start
		addr    string
		code    int
		retry   string
		outcome sluice.Outcome
		started bool
	}{
		{0, "192.0.2.1", 200, "", sluice.OutcomeAllowed, false},
		{0, "192.0.2.1", 200, "", sluice.OutcomeAllowed, false},
		{0, "192.0.2.1", 429, "900", sluice.OutcomeBlocked, true},
		{5 * time.Minute, "192.0.2.1", 429, "600", sluice.OutcomeBlocked, false},
		{5 * time.Minute, "192.0.2.2", 200, "", sluice.OutcomeAllowed, false},
		{15*time.Minute - time.Second, "192.0.2.1", 429, "1", sluice.OutcomeBlocked, false},
		{15 * time.Minute, "192.0.2.1", 200, "", sluice.OutcomeAllowed, false},
	} {
		clock.Set(t0.Add(tc.after))
		w := send(tc.addr)
		ds := obs.drain()
		if w.Code != tc.code || w.Header().Get("Retry-After") != tc.retry || len(ds) != 1 || ds[0].Outcome != tc.outcome || ds[0].Result.BlockStarted != tc.started {
			t.Fatalf("%s at +%v: %d, Retry-After %q, decisions %+v; want %d, %q, %v (started %v)",
				tc.addr, tc.after, w.Code, w.Header().Get("Retry-After"), ds, tc.code, tc.retry, tc.outcome, tc.started)
		}
		if tc.code == http.StatusTooManyRequests && w.Header().Get("Content-Type") != "application/problem+json" {
			t.Fatalf("a blocked refusal's body: %q", w.Header().Get("Content-Type"))
		}
	}
}
