package middleware_test

import (
	"errors"
	"github.com/sluicehq/sluice/decide"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
)

func TestAllowThenDeny(t *testing.T) {
	store, clock := newMemstore(t)
	next := &okHandler{}
	srv := serve(t, middleware.Limit(store, rules.MustNew(perIP(sluice.PerMinute(3)))), next)

	for i := range 3 {
		resp := get(t, srv.Client(), srv.URL)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
		if got, want := resp.Header.Get("RateLimit"), `"per-ip";r=`+string(rune('2'-i))+";t="+[]string{"20", "40", "60"}[i]; got != want {
			t.Fatalf("request %d: RateLimit %q, want %q", i, got, want)
		}
		if got := resp.Header.Get("RateLimit-Policy"); got != `"per-ip";q=3;w=60` {
			t.Fatalf("RateLimit-Policy %q", got)
		}
	}
	resp := get(t, srv.Client(), srv.URL)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("4th request: status %d, want 429", resp.StatusCode)
	}
	for k, want := range map[string]string{
		"Retry-After":   "20",
		"RateLimit":     `"per-ip";r=0;t=20`,
		"Cache-Control": "no-store",
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	p := problem(t, resp)
	if p.Status != 429 || p.Type != middleware.TypeQuotaExceeded || len(p.ViolatedPolicies) != 1 || p.ViolatedPolicies[0] != "per-ip" || !strings.Contains(p.Detail, "retry in 20 s") {
		t.Fatalf("problem %+v", p)
	}
	if n := next.calls.Load(); n != 3 {
		t.Fatalf("handler ran %d times, want 3", n)
	}
	clock.Advance(20 * time.Second)
	if resp := get(t, srv.Client(), srv.URL); resp.StatusCode != http.StatusOK {
		t.Fatalf("after Retry-After: status %d", resp.StatusCode)
	}
}

func TestHeaderModes(t *testing.T) {
	limit := sluice.PerMinute(10).WithBurst(20)
	cases := []struct {
		mode        headers.Mode
		present     []string
		absent      []string
		checkValues map[string]string
	}{
		{headers.IETF, []string{"RateLimit", "RateLimit-Policy"}, []string{"RateLimit-Limit", "X-RateLimit-Limit"},
			map[string]string{"RateLimit-Policy": `"per-ip";q=10;w=60;sluice-burst=20`, "RateLimit": `"per-ip";r=19;t=6`}},
		{headers.Draft06, []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"}, []string{"RateLimit", "X-RateLimit-Limit"},
			map[string]string{"RateLimit-Limit": "10", "RateLimit-Remaining": "19", "RateLimit-Reset": "6"}},
		{headers.XRateLimit, []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"}, []string{"RateLimit", "RateLimit-Policy", "RateLimit-Limit"},
			map[string]string{"X-RateLimit-Remaining": "19"}},
		{headers.IETF | headers.XRateLimit, []string{"RateLimit", "X-RateLimit-Limit"}, []string{"RateLimit-Limit"}, nil},
		{headers.None, nil, []string{"RateLimit", "RateLimit-Policy", "RateLimit-Limit", "X-RateLimit-Limit"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.mode.String(), func(t *testing.T) {
			store, _ := newMemstore(t)
			srv := serve(t, middleware.Limit(store, rules.MustNew(perIP(limit)), decide.WithHeaders(tc.mode)), &okHandler{})
			resp := get(t, srv.Client(), srv.URL)
			for _, k := range tc.present {
				if resp.Header.Get(k) == "" {
					t.Errorf("%s missing", k)
				}
			}
			for _, k := range tc.absent {
				if v := resp.Header.Get(k); v != "" {
					t.Errorf("%s = %q, want absent", k, v)
				}
			}
			for k, want := range tc.checkValues {
				if got := resp.Header.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestShadowAndHiddenRulesStayOutOfHeaders(t *testing.T) {
	store, _ := newMemstore(t)
	set := rules.MustNew(
		perIP(sluice.PerMinute(100)),
		rules.Rule{Name: "global", Key: keyfunc.Global(), Limit: sluice.PerMinute(1000)},
		rules.Rule{Name: "dry-run", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(1), Shadow: true},
		rules.Rule{Name: "secret", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(2), Hidden: true},
	)
	rec := newRecorder()
	srv := serve(t, middleware.Limit(store, set, decide.WithObserver(rec)), &okHandler{})

	for i := range 2 {
		resp := get(t, srv.Client(), srv.URL)
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d (the shadow rule must not block)", i, resp.StatusCode)
		}
		if got := resp.Header.Get("RateLimit-Policy"); got != `"per-ip";q=100;w=60, "global";q=1000;w=60` {
			t.Fatalf("RateLimit-Policy %q", got)
		}
		if got := resp.Header.Get("RateLimit"); !strings.HasPrefix(got, `"per-ip";r=`) {
			t.Fatalf("RateLimit %q, want the per-ip rule (fewest remaining among exposed)", got)
		}
	}
	resp := get(t, srv.Client(), srv.URL)
	if resp.StatusCode != 429 {
		t.Fatalf("3rd request: %d, want 429 from the hidden rule", resp.StatusCode)
	}
	p := problem(t, resp)
	if len(p.ViolatedPolicies) != 0 || strings.Contains(p.Detail, "secret") || resp.Header.Get("Retry-After") != "30" {
		t.Fatalf("a hidden rule leaked or Retry-After missing: %+v, Retry-After %q", p, resp.Header.Get("Retry-After"))
	}
	var shadowDenied int
	for _, d := range rec.drain() {
		if d.Rule == "dry-run" && d.Outcome == sluice.OutcomeShadowDenied {
			shadowDenied++
		}
	}
	if shadowDenied != 2 {
		t.Fatalf("shadow denials observed: %d, want 2 (requests 2 and 3: the shadow bucket consumed only on request 1)", shadowDenied)
	}
}

func TestStoreFailure(t *testing.T) {
	storeErr := &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrTimeout, Ambiguous: true, Err: errors.New("i/o timeout at 10.1.2.3:6379")}
	for _, tc := range []struct {
		name    string
		rules   []rules.Rule
		status  int
		outcome sluice.Outcome
	}{
		{"local by default", []rules.Rule{perIP(sluice.PerMinute(1))}, 200, sluice.OutcomeLocal},
		{"open", []rules.Rule{{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(1), OnFail: rules.FailOpen}}, 200, sluice.OutcomeFailedOpen},
		{"closed", []rules.Rule{perIP(sluice.PerMinute(1)), {Name: "strict", Key: keyfunc.Global(), Limit: sluice.PerMinute(5), OnFail: rules.FailClosed}}, 503, sluice.OutcomeFailedClosed},
		{"closed shadow does not block", []rules.Rule{{Name: "strict", Key: keyfunc.Global(), Limit: sluice.PerMinute(5), OnFail: rules.FailClosed, Shadow: true}}, 200, sluice.OutcomeFailedOpen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			next := &okHandler{}
			srv := serve(t, middleware.Limit(failingStore{storeErr}, rules.MustNew(tc.rules...), decide.WithObserver(rec), decide.WithLogger(quietLogger())), next)
			resp := get(t, srv.Client(), srv.URL)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if resp.Header.Get("RateLimit") != "" || resp.Header.Get("RateLimit-Policy") != "" {
				t.Fatalf("rules decided by on_fail appeared in headers")
			}
			if tc.status == 503 {
				p := problem(t, resp)
				if p.Type != middleware.TypeTemporaryReducedCapacity || resp.Header.Get("Retry-After") != "1" || strings.Contains(p.Detail, "10.1.2.3") || strings.Contains(p.Detail, "timeout") {
					t.Fatalf("503: %+v, Retry-After %q", p, resp.Header.Get("Retry-After"))
				}
				if next.calls.Load() != 0 {
					t.Fatal("handler ran on a fail-closed request")
				}
			} else {
				body, _ := io.ReadAll(resp.Body)
				if string(body) != "ok" {
					t.Fatalf("body %q", body)
				}
			}
			ds := rec.drain()
			if len(ds) == 0 || ds[len(ds)-1].Outcome != tc.outcome || !errors.Is(ds[len(ds)-1].Err, sluice.ErrTimeout) {
				t.Fatalf("observed %+v, want last outcome %v with the store error", ds, tc.outcome)
			}
		})
	}
}

func TestKeyErrorDoesNotLeak(t *testing.T) {
	store, _ := newMemstore(t)
	key := func(*http.Request) (string, error) { return "", errors.New("database password is hunter2") }
	next := &okHandler{}
	srv := serve(t, middleware.Limit(store, rules.MustNew(rules.Rule{Name: "custom", Key: keyfunc.New("custom", key), Limit: sluice.PerMinute(1)})), next)
	resp := get(t, srv.Client(), srv.URL)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || strings.Contains(string(body), "hunter2") || next.calls.Load() != 0 {
		t.Fatalf("status %d body %q handler calls %d", resp.StatusCode, body, next.calls.Load())
	}
	var gotErr error
	srv = serve(t, middleware.Limit(store, rules.MustNew(rules.Rule{Name: "custom", Key: keyfunc.New("custom", key), Limit: sluice.PerMinute(1)}),
		middleware.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) { gotErr = err; w.WriteHeader(401) })), next)
	if resp := get(t, srv.Client(), srv.URL); resp.StatusCode != 401 || !errors.Is(gotErr, decide.ErrKeyFailed) {
		t.Fatalf("custom error handler: status %d err %v", resp.StatusCode, gotErr)
	}
}

// bodyTrap fails the test if the limiter reads the request body.
type bodyTrap struct{ t *testing.T }

func (b bodyTrap) Read([]byte) (int, error) {
	b.t.Error("the limiter read the request body")
	return 0, io.EOF
}

func TestBodyIsNotRead(t *testing.T) {
	store, _ := newMemstore(t)
	h := middleware.Limit(store, rules.MustNew(rules.Rule{Name: "g", Key: keyfunc.Global(), Limit: sluice.PerMinute(1)}))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for i, want := range []int{http.StatusOK, http.StatusTooManyRequests} { // allowed, then denied
		req, _ := http.NewRequest(http.MethodPost, "http://example.test/", bodyTrap{t})
		req.RemoteAddr = "192.0.2.1:1234"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != want {
			t.Fatalf("request %d: status %d, want %d", i+1, w.Code, want)
		}
	}
}

type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

func TestInvalidConfiguration(t *testing.T) {
	store, _ := newMemstore(t)
	set := rules.MustNew(perIP(sluice.PerMinute(1)))
	for name, err := range map[string]error{
		"nil store":    first(middleware.New(nil, set)),
		"nil rules":    first(middleware.New(store, nil)),
		"zero budget":  first(middleware.New(store, set, decide.WithBudget(0))),
		"nil deny":     first(middleware.New(store, set, middleware.WithDenyHandler(nil))),
		"nil on error": first(middleware.New(store, set, middleware.WithErrorHandler(nil))),
		"nil logger":   first(middleware.New(store, set, decide.WithLogger(nil))),
		"nil clock":    first(middleware.New(store, set, decide.WithClock(nil))),
		"no instances": first(middleware.New(store, set, decide.WithInstances(0))),
	} {
		if !errors.Is(err, sluice.ErrInvalidConfig) || !strings.Contains(err.Error(), "middleware: ") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Limit did not panic on a nil store")
		}
	}()
	middleware.Limit(nil, set)
}

func first[T any](_ T, err error) error { return err }
