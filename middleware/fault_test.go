package middleware_test

import (
	"context"
	"errors"
	"github.com/sluicehq/sluice/decide"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/faultproxy"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/metrics"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/redisstore"
)

// Fault tests: a real redis-server behind an in-process fault proxy. Every
// latency assertion is a ceiling against hangs, with generous slack, not a
// speed measurement.
const (
	faultBudget   = 50 * time.Millisecond
	faultCeiling  = faultBudget + 150*time.Millisecond // budget + slack
	recoveryLimit = 3 * time.Second                    // breaker OpenFor (500 ms) + go-redis redial (≤ 1 s) + slack
	faultCapacity = 1000                               // the rules' capacity: far above what the tests send
)

// outcomes counts decisions by outcome, and the store calls that left the
// process (not refused by the breaker).
type outcomes struct {
	mu    sync.Mutex
	n     map[sluice.Outcome]int
	calls atomic.Int64
}

func (o *outcomes) ObserveStoreCall(_ context.Context, c sluice.StoreCall) {
	if !errors.Is(c.Err, sluice.ErrBreakerOpen) {
		o.calls.Add(1)
	}
}

func (o *outcomes) Observe(_ context.Context, d sluice.Decision) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = map[sluice.Outcome]int{}
	}
	o.n[d.Outcome]++
}

func (o *outcomes) get(k sluice.Outcome) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[k]
}

type faultEnv struct {
	srv          *redistest.Server
	px           *faultproxy.Proxy
	direct       *redis.Client // to the server, not through the proxy
	client       *redis.Client // the store's, through the proxy
	store        *redisstore.Store
	open, closed http.Handler // a fail-open and a fail-closed limiter on store
	seen         *outcomes
	metrics      *httptest.Server // serves the Prometheus collector's /metrics
	sent         atomic.Int64     // requests sent
	ok           atomic.Int64     // answered 200
	// reloadsBefore is the store's script reloads before the server's
	// commandstats began: a restart resets them.
	reloadsBefore int64
}

func newFaultEnv(t *testing.T, poolSize int) *faultEnv {
	t.Helper()
	e := &faultEnv{srv: redistest.Start(t), seen: &outcomes{}}
	e.px = faultproxy.Start(t, e.srv.Addr)
	e.direct = redis.NewClient(&redis.Options{Addr: e.srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { e.direct.Close() })
	client := redis.NewClient(&redis.Options{
		Addr:                  e.px.Addr,
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
		DialerRetries:         1,
		DialTimeout:           faultBudget,
		ReadTimeout:           faultBudget,
		WriteTimeout:          faultBudget,
		PoolTimeout:           faultBudget,
		PoolSize:              poolSize,
	})
	t.Cleanup(func() { client.Close() })
	e.client = client
	collector, err := metrics.New(metrics.Config{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector)
	e.metrics = httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(e.metrics.Close)
	store, err := redisstore.New(client, redisstore.Config{Logger: quietLogger(), StartupCheckTimeout: -1, Events: collector, Endpoint: "redis-under-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close(context.Background()) })
	e.store = store
	limit := sluice.PerHour(1).WithBurst(faultCapacity)
	opts := []middleware.Option{decide.WithBudget(faultBudget), decide.WithObserver(sluice.Observers(e.seen, collector)), decide.WithLogger(quietLogger())}
	e.open = middleware.Limit(store, rules.MustNew(rules.Rule{Name: "open", Key: keyfunc.Global(), Limit: limit, OnFail: rules.FailOpen}), opts...)(&okHandler{})
	e.closed = middleware.Limit(store, rules.MustNew(rules.Rule{Name: "closed", Key: keyfunc.Global(), Limit: limit, OnFail: rules.FailClosed}), opts...)(&okHandler{})
	return e
}

// do sends one request through h and checks it finished within the
// ceiling.
func (e *faultEnv) do(t *testing.T, h http.Handler) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	rec := httptest.NewRecorder()
	start := time.Now()
	h.ServeHTTP(rec, req)
	if d := time.Since(start); d > faultCeiling {
		t.Errorf("request took %v, ceiling %v (budget %v)", d, faultCeiling, faultBudget)
	}
	e.sent.Add(1)
	if rec.Code == http.StatusOK {
		e.ok.Add(1)
	}
	return rec
}

// expectFailModes sends requests to both limiters during a fault: the
// fail-open one must answer 200, the fail-closed one 503 with Retry-After.
func (e *faultEnv) expectFailModes(t *testing.T, n int) {
	t.Helper()
	for range n {
		if rec := e.do(t, e.open); rec.Code != http.StatusOK {
			t.Fatalf("fail-open rule during a fault: status %d", rec.Code)
		}
		rec := e.do(t, e.closed)
		if rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("fail-closed rule during a fault: status %d", rec.Code)
		}
		if ra, _ := strconv.Atoi(rec.Header().Get("Retry-After")); ra < 1 {
			t.Fatalf("503 Retry-After %q", rec.Header().Get("Retry-After"))
		}
	}
}

// recover waits until requests are decided by Redis again and returns how
// long that took.
func (e *faultEnv) recover(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < 2*recoveryLimit {
		before := e.seen.get(sluice.OutcomeAllowed)
		e.do(t, e.open)
		if e.seen.get(sluice.OutcomeAllowed) > before {
			d := time.Since(start)
			if d > recoveryLimit {
				t.Errorf("recovered after %v, limit %v", d, recoveryLimit)
			}
			return d
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("not recovered after %v", 2*recoveryLimit)
	return 0
}

// scriptRuns returns how many times the server ran a script.
func (e *faultEnv) scriptRuns(t *testing.T) int64 {
	t.Helper()
	evalsha, exact := commandCalls(t, e.direct, "evalsha")
	eval, _ := commandCalls(t, e.direct, "eval")
	if !exact {
		// Before Redis 6.2 an EVALSHA refused with NOSCRIPT counts as a
		// call: the store re-sent its script once for each.
		evalsha -= e.store.ScriptReloads() - e.reloadsBefore
	}
	return evalsha + eval
}

// checkBounds: the script ran at most once per store call that left the
// process (no client retry re-ran it; a reload after NOSCRIPT runs it once,
// as Redis refused the first try), and what was admitted stays within the
// capacity plus the fail-open admissions the observer counted.
func (e *faultEnv) checkBounds(t *testing.T, runs int64) {
	t.Helper()
	if calls := e.seen.calls.Load(); runs > calls {
		t.Errorf("the script ran %d times for %d store calls", runs, calls)
	}
	failOpen := int64(e.seen.get(sluice.OutcomeFailedOpen))
	if ok := e.ok.Load(); ok > faultCapacity+failOpen {
		t.Errorf("admitted %d > capacity %d + fail-open %d", ok, faultCapacity, failOpen)
	}
}

// commandCalls reads how often Redis ran cmd to completion, from INFO
// commandstats: calls less failed and rejected ones (an EVALSHA that found
// no script is a failed call; the EVAL after it is the run). exact is false
// when the server does not count failed calls (before Redis 6.2): calls
// then include them.
func commandCalls(t *testing.T, c *redis.Client, cmd string) (n int64, exact bool) {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":")
		if !ok {
			continue
		}
		fields := map[string]int64{}
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			fields[k], _ = strconv.ParseInt(v, 10, 64)
		}
		_, exact = fields["failed_calls"]
		return fields["calls"] - fields["failed_calls"] - fields["rejected_calls"], exact
	}
	return 0, true
}

// warm opens several pooled connections (faults then hit commands, not
// handshakes) and sends healthy requests.
func (e *faultEnv) warm(t *testing.T) {
	t.Helper()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = e.client.Ping(context.Background()).Err()
		}()
	}
	wg.Wait()
	for range 3 {
		if rec := e.do(t, e.open); rec.Code != http.StatusOK {
			t.Fatalf("healthy: status %d", rec.Code)
		}
		if rec := e.do(t, e.closed); rec.Code != http.StatusOK {
			t.Fatalf("healthy: status %d", rec.Code)
		}
	}
}

func TestFaultToxics(t *testing.T) {
	cases := []struct {
		name  string
		fault func(*faultproxy.Proxy)
	}{
		{"latency beyond the budget", func(p *faultproxy.Proxy) { p.SetLatency(faultproxy.Downstream, 300*time.Millisecond) }},
		{"black hole", func(p *faultproxy.Proxy) { p.BlackHole(faultproxy.Upstream, true) }},
		{"reset after the script ran", func(p *faultproxy.Proxy) { p.ResetAfter(faultproxy.Downstream, 10*time.Millisecond) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newFaultEnv(t, 0)
			e.warm(t)
			tc.fault(e.px)
			e.expectFailModes(t, 10)
			if e.store.BreakerState() != sluice.BreakerOpen {
				t.Errorf("breaker %v after repeated failures, want open", e.store.BreakerState())
			}
			e.px.Heal()
			d := e.recover(t)
			time.Sleep(400 * time.Millisecond) // let delayed commands reach Redis before counting
			e.checkBounds(t, e.scriptRuns(t))
			t.Logf("recovered %v after the fault was removed; %d requests, %d fail-open, %d fail-closed",
				d, e.sent.Load(), e.seen.get(sluice.OutcomeFailedOpen), e.seen.get(sluice.OutcomeFailedClosed))
		})
	}
}

func TestFaultRedisDownAtStart(t *testing.T) {
	e := newFaultEnv(t, 0)
	e.px.Stop()
	e.expectFailModes(t, 10)
	if e.store.BreakerState() != sluice.BreakerOpen {
		t.Errorf("breaker %v, want open", e.store.BreakerState())
	}
	if err := e.px.Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("recovered %v after the proxy came up", e.recover(t))
	e.checkBounds(t, e.scriptRuns(t))
}

func TestFaultRedisKilledUnderLoad(t *testing.T) {
	e := newFaultEnv(t, 0)
	e.warm(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 { // load during the kill and the restart
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				e.do(t, e.open)
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	e.srv.Kill()
	e.expectFailModes(t, 5)
	e.reloadsBefore = e.store.ScriptReloads() // none while the server is down
	e.srv.Restart()                           // same port; scripts and data gone
	d := e.recover(t)
	close(stop)
	wg.Wait()
	t.Logf("recovered %v after the restart; %d requests, %d fail-open", d, e.sent.Load(), e.seen.get(sluice.OutcomeFailedOpen))
	// The restarted server counts only its own runs: at most one per
	// request (plus the reload after NOSCRIPT, which Redis did not run).
	e.checkBounds(t, e.scriptRuns(t))
	if e.store.ScriptReloads() < 1 {
		t.Errorf("no script reload after the restart")
	}
}

func TestFaultPoolExhaustion(t *testing.T) {
	e := newFaultEnv(t, 2)
	e.warm(t)
	e.px.SetLatency(faultproxy.Downstream, 200*time.Millisecond)
	var wg sync.WaitGroup
	var codes sync.Map
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := e.open
			if i%2 == 1 {
				h = e.closed
			}
			rec := e.do(t, h)
			codes.Store(i, rec.Code)
		}()
	}
	wg.Wait()
	codes.Range(func(k, v any) bool {
		i, code := k.(int), v.(int)
		if want := []int{http.StatusOK, http.StatusServiceUnavailable}[i%2]; code != want {
			t.Errorf("request %d: status %d, want %d", i, code, want)
		}
		return true
	})
	e.px.Heal()
	e.recover(t)
	time.Sleep(300 * time.Millisecond)
	e.checkBounds(t, e.scriptRuns(t))
}

func TestFaultClientPause(t *testing.T) {
	e := newFaultEnv(t, 0)
	e.warm(t)
	if err := e.direct.Do(context.Background(), "CLIENT", "PAUSE", "400").Err(); err != nil {
		t.Fatal(err)
	}
	e.expectFailModes(t, 3)
	e.recover(t)
	time.Sleep(100 * time.Millisecond)
	e.checkBounds(t, e.scriptRuns(t))
}

// scrape fetches /metrics over HTTP and returns the value of the series
// whose line starts with series (name and labels), or 0.
func (e *faultEnv) scrape(t *testing.T, series string) float64 {
	t.Helper()
	resp, err := e.metrics.Client().Get(e.metrics.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// TestFaultMetrics scrapes the real /metrics handler while a fault comes
// and goes: the counters and the breaker gauge follow it.
func TestFaultMetrics(t *testing.T) {
	e := newFaultEnv(t, 0)
	e.warm(t)
	const (
		allowed      = `sluice_decisions_total{outcome="allowed",rule="open"}`
		failedOpen   = `sluice_decisions_total{outcome="failed_open",rule="open"}`
		failedShut   = `sluice_decisions_total{outcome="failed_closed",rule="closed"}`
		timeouts     = `sluice_store_errors_total{ambiguous="true",kind="timeout"}`
		slowTimeouts = `sluice_store_errors_total{ambiguous="true",kind="process_slow"}`
		breakerOpn   = `sluice_store_errors_total{ambiguous="false",kind="breaker_open"}`
		breaker      = `sluice_breaker_state{endpoint="redis-under-test"}`
		calls        = `sluice_store_call_duration_seconds_count{result="ok"}`
	)
	if got := e.scrape(t, allowed); got != 3 {
		t.Fatalf("%s = %v before the fault, want 3", allowed, got)
	}
	if got := e.scrape(t, calls); got != 6 {
		t.Fatalf("%s = %v, want 6", calls, got)
	}
	e.px.BlackHole(faultproxy.Upstream, true)
	e.expectFailModes(t, 5)
	if got := e.scrape(t, failedOpen); got != 5 {
		t.Errorf("%s = %v, want 5", failedOpen, got)
	}
	if got := e.scrape(t, failedShut); got != 5 {
		t.Errorf("%s = %v, want 5", failedShut, got)
	}
	// A timeout noticed late on a busy machine is the process's: both kinds
	// are timeouts.
	if got := e.scrape(t, timeouts) + e.scrape(t, slowTimeouts); got < 5 {
		t.Errorf("%s and %s = %v, want at least the 5 that opened the breaker", timeouts, slowTimeouts, got)
	}
	if got := e.scrape(t, breakerOpn); got < 1 {
		t.Errorf("%s = %v, want the calls the open breaker refused", breakerOpn, got)
	}
	if got := e.scrape(t, breaker); got != 1 {
		t.Errorf("%s = %v during the fault, want 1 (open)", breaker, got)
	}
	e.px.Heal()
	e.recover(t)
	if got := e.scrape(t, breaker); got != 0 {
		t.Errorf("%s = %v after recovery, want 0 (closed)", breaker, got)
	}
	if got := e.scrape(t, allowed); got < 4 {
		t.Errorf("%s = %v after recovery, want more than before the fault", allowed, got)
	}
}
