package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
)

// inFlight is a concurrency rule keyed by IP.
func inFlight(max int64) rules.Rule {
	return rules.Rule{Name: "reports-in-flight", Key: keyfunc.ClientIP(), Concurrency: &rules.Concurrency{Max: max, Hold: time.Minute}}
}

// gate is a handler that tells when a request enters it and holds it
// until released; served behind lim, it tells when the limiter is done
// with a request too (its slot freed).
type gate struct {
	entered chan *http.Request
	release chan struct{}
	over    chan struct{} // the limiter returned
}

func newGate() *gate {
	return &gate{entered: make(chan *http.Request, 16), release: make(chan struct{}), over: make(chan struct{}, 16)}
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.entered <- r
	<-g.release
	_, _ = io.WriteString(w, "done")
}

// serveGated starts a real HTTP server with lim in front of next, which
// reports on g.over each time the limiter has returned.
func serveGated(t *testing.T, lim func(http.Handler) http.Handler, next http.Handler, g *gate) *httptest.Server {
	inner := lim(next)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { g.over <- struct{}{} }()
		inner.ServeHTTP(w, r)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the panicking handler's report
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// Six requests of one client at once through real HTTP, at most two in
// flight: two reach the handler, four are refused with 429, Retry-After 1
// and a problem and fields naming the rule; the admitted ones carry the
// rate rule's fields alone; once the two are over, both slots are free.
// On memstore, a redis-server and a 3-master cluster.
func TestConcurrencyThroughHTTP(t *testing.T) {
	for name, newStore := range countStores(t) {
		t.Run(name, func(t *testing.T) { concurrencyThroughHTTP(t, newStore(t)) })
	}
}

func concurrencyThroughHTTP(t *testing.T, store sluice.Store) {
	g := newGate()
	srv := serveGated(t, middleware.Limit(store, rules.MustNew(inFlight(2), perIP(sluice.PerMinute(100))), decide.WithBudget(5*time.Second)), g, g)
	type answer struct {
		code                  int
		retry, policy, remain string
		problem               middleware.Problem
	}
	answers := make(chan answer, 6)
	for range 6 {
		go func() {
			resp, err := srv.Client().Get(srv.URL)
			if err != nil {
				answers <- answer{code: -1}
				return
			}
			defer resp.Body.Close()
			a := answer{code: resp.StatusCode, retry: resp.Header.Get("Retry-After"), policy: resp.Header.Get("RateLimit-Policy"), remain: resp.Header.Get("RateLimit")}
			if a.code == http.StatusTooManyRequests {
				_ = jsonProblem(resp, &a.problem)
			}
			answers <- a
		}()
	}
	for range 2 {
		<-g.entered
	}
	for range 4 {
		a := <-answers
		if a.code != http.StatusTooManyRequests || a.retry != "1" || len(a.problem.ViolatedPolicies) != 1 || a.problem.ViolatedPolicies[0] != "reports-in-flight" ||
			a.remain != `"reports-in-flight";r=0;t=1` || a.policy != `"reports-in-flight";q=2;w=60, "per-ip";q=100;w=60` {
			t.Errorf("a refused request: %+v, want 429, Retry-After 1, a problem and fields naming reports-in-flight", a)
		}
	}
	for range 4 {
		<-g.over
	}
	close(g.release)
	for range 2 {
		if a := <-answers; a.code != http.StatusOK || a.policy != `"per-ip";q=100;w=60` || a.remain == "" || a.remain[:9] != `"per-ip";` {
			t.Errorf("a request in flight: %+v, want 200 with the rate rule's fields alone", a)
		}
		<-g.over
	}
	if t.Failed() {
		return
	}
	// Both slots are free again, and an admitted request's fields are the
	// rate rule's: slots in flight are no quota.
	peek := sluice.Hit{Key: rules.BucketKey("reports-in-flight", "ip", "127.0.0.1"), Limit: sluice.Per(2, time.Minute), Algorithm: sluice.SlidingLog, Concurrency: true, Peek: true}
	var out [1]sluice.Result
	if err := store.Take(context.Background(), []sluice.Hit{peek}, out[:]); err != nil || out[0].Remaining != 2 {
		t.Fatalf("the slots after both requests: %+v, %v, want 2 free", out[0], err)
	}
}

// A slot is freed when the handler panics, and not when the client goes
// away while the handler still runs: on memstore, a redis-server and a
// 3-master cluster.
func TestConcurrencySlotFreedAtTheEnd(t *testing.T) {
	for name, newStore := range countStores(t) {
		t.Run(name, func(t *testing.T) { concurrencySlotFreedAtTheEnd(t, newStore(t)) })
	}
}

func concurrencySlotFreedAtTheEnd(t *testing.T, store sluice.Store) {
	g := newGate()
	panicking := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic("boom")
		}
		g.ServeHTTP(w, r)
	})
	srv := serveGated(t, middleware.Limit(store, rules.MustNew(inFlight(1)), decide.WithBudget(5*time.Second)), panicking, g)
	for range 3 {
		if resp, err := srv.Client().Get(srv.URL + "/panic"); err == nil {
			resp.Body.Close()
			t.Fatalf("a panicking handler answered %d", resp.StatusCode)
		}
		<-g.over
	}
	// The client of a request in flight goes away; its handler runs on.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	r := <-g.entered
	cancel()
	<-r.Context().Done() // the server saw the client go
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the client that went away: %v, want context.Canceled", err)
	}
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	<-g.over
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("while the first handler runs after its client went away: %d, want 429", resp.StatusCode)
	}
	close(g.release)
	<-g.over
	g.release = make(chan struct{})
	go func() {
		resp, err := srv.Client().Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-g.entered // admitted: the slot was freed when the first handler returned
	close(g.release)
	<-g.over
}

// jsonProblem decodes resp's problem body into p.
func jsonProblem(resp *http.Response, p *middleware.Problem) error {
	return json.NewDecoder(resp.Body).Decode(p)
}

// While the store is down, the local fallback holds a concurrency rule's
// slots in process and frees them when the request is over: a request
// sent from inside another's handler is refused, and the next one after
// it passes.
func TestConcurrencyWhileStoreDown(t *testing.T) {
	down := failingStore{&sluice.StoreError{Op: "test", Kind: sluice.ErrUnavailable}}
	lim := middleware.Limit(down, rules.MustNew(inFlight(1)), decide.WithInstances(1), decide.WithLogger(quietLogger()))
	var h http.Handler
	var inner int
	h = lim(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/outer" {
			w2 := httptest.NewRecorder()
			h.ServeHTTP(w2, httptest.NewRequest("GET", "/inner", nil))
			inner = w2.Code
		}
	}))
	for i := range 3 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/outer", nil))
		if w.Code != http.StatusOK || inner != http.StatusTooManyRequests {
			t.Fatalf("request %d: %d, and %d from inside its handler; want 200 and 429", i+1, w.Code, inner)
		}
	}
}

// refreshSignal is a memory store that tells of each refresh of slots.
type refreshSignal struct {
	*memstore.Store
	refreshed chan struct{}
}

func (s refreshSignal) RefreshSlots(ctx context.Context, refreshes []sluice.SlotRefresh) error {
	err := s.Store.RefreshSlots(ctx, refreshes)
	select {
	case s.refreshed <- struct{}{}:
	default: // the test has seen enough
	}
	return err
}

// A request that runs 3 × its rule's hold keeps its slot: it is refreshed
// every hold/3 on the decider's clock (a fake one whose timers step it),
// and a request sent from inside its handler then is refused; once it is
// over, the next passes.
func TestConcurrencySlotRefreshedWhileRunning(t *testing.T) {
	mem, clock := newMemstore(t)
	store := refreshSignal{mem, make(chan struct{}, 9)}
	lim := middleware.Limit(store, rules.MustNew(inFlight(1)), decide.WithClock(clock), decide.WithLogger(quietLogger()))
	var h http.Handler
	var inner int
	var ranFor time.Duration
	h = lim(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/long" {
			return
		}
		for range 9 {
			select {
			case <-store.refreshed:
			case <-time.After(10 * time.Second): // a ceiling against a hang: no refresh came
				return
			}
		}
		ranFor = clock.Now().Sub(t0)
		w2 := httptest.NewRecorder()
		h.ServeHTTP(w2, httptest.NewRequest("GET", "/", nil))
		inner = w2.Code
	}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/long", nil))
	if w.Code != http.StatusOK || ranFor < 3*time.Minute || inner != http.StatusTooManyRequests {
		t.Fatalf("a request that ran %v: %d, and %d from inside its handler then; want 3m0s or more, 200 and 429", ranFor, w.Code, inner)
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("after the long request: %d, want 200", w.Code)
	}
}
