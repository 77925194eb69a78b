package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/faultproxy"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// Connection set-up under latency: a real redis-server behind a fault
// proxy, a store built with NewClient and the default Config, load at a
// fixed rate with the middleware's default budget per call. Latency
// figures are ceilings against hangs, with generous slack, not speed
// measurements.

const (
	budget      = 50 * time.Millisecond  // the middleware's default
	budgetSlack = 150 * time.Millisecond // as the middleware's fault tests: against hangs
	loadRate    = 1000                   // calls per second
)

// requestKey marks the context of a request, so that a hook can tell
// whether a request's call ran a handshake.
type requestKey struct{}

// handshakeSpy counts dials and HELLOs run under a request's context.
type handshakeSpy struct{ paid atomic.Int64 }

func (h *handshakeSpy) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if ctx.Value(requestKey{}) != nil {
			h.paid.Add(1)
		}
		return next(ctx, network, addr)
	}
}

func (h *handshakeSpy) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "hello" && ctx.Value(requestKey{}) != nil {
			h.paid.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *handshakeSpy) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

type connEnv struct {
	srv   *redistest.Server
	px    *faultproxy.Proxy
	store *redisstore.Store
	spy   *handshakeSpy
}

// newConnEnv starts a server behind a proxy with latency added to every
// reply, and a store on it with the default Config.
func newConnEnv(t *testing.T, latency time.Duration) *connEnv {
	return newConnEnvWith(t, latency, redisstore.Config{})
}

// newConnEnvWith is newConnEnv with the store's Config cfg.
func newConnEnvWith(t *testing.T, latency time.Duration, cfg redisstore.Config) *connEnv {
	t.Helper()
	e := &connEnv{srv: redistest.Start(t), spy: &handshakeSpy{}}
	e.px = faultproxy.Start(t, e.srv.Addr)
	e.px.SetLatency(faultproxy.Downstream, latency)
	client, err := redisstore.NewClient(e.px.Addr)
	if err != nil {
		t.Fatal(err)
	}
	client.AddHook(e.spy)
	t.Cleanup(func() { client.Close() })
	e.store = newStoreWith(t, client, nil, cfg)
	return e
}

// loadStats counts the calls of a load run.
type loadStats struct {
	sent, decided, slow atomic.Int64
	maxLatency          atomic.Int64 // nanoseconds
	mu                  sync.Mutex
	kinds               map[string]int // failures by kind
}

func (l *loadStats) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("%d calls, %d decided (%.2f %%), %d over budget + slack, slowest %v; failures %v",
		l.sent.Load(), l.decided.Load(), l.share()*100, l.slow.Load(), time.Duration(l.maxLatency.Load()), l.kinds)
}

// failed counts err by its kind.
func (l *loadStats) failed(err error) {
	kind := "other"
	for _, k := range []error{sluice.ErrBreakerOpen, sluice.ErrTimeout, sluice.ErrUnavailable} {
		if errors.Is(err, k) {
			kind = k.Error()
			break
		}
	}
	if sluice.IsAmbiguous(err) {
		kind += " (ambiguous)"
	}
	if os.Getenv("DBG") != "" {
		kind += ": " + err.Error()[:min(len(err.Error()), 90)]
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kinds == nil {
		l.kinds = map[string]int{}
	}
	l.kinds[kind]++
}

// kind returns how many calls failed with an error of kind k, ambiguous
// or not.
func (l *loadStats) kind(k error) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.kinds[k.Error()] + l.kinds[k.Error()+" (ambiguous)"]
}

func (l *loadStats) share() float64 {
	return float64(l.decided.Load()) / float64(max(l.sent.Load(), 1))
}

// load sends calls at loadRate for d, or until stop closes, each under
// the budget, on its own key, and returns once every call has returned.
// onDecided, when set, is called with the time of each decided call.
func (e *connEnv) load(d time.Duration, stop <-chan struct{}, onDecided func(time.Time)) *loadStats {
	st := &loadStats{}
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; d <= 0 || time.Duration(i)*time.Second/loadRate < d; i++ {
		at := start.Add(time.Duration(i) * time.Second / loadRate)
		if w := time.Until(at); w > 0 {
			select {
			case <-time.After(w):
			case <-stop:
				wg.Wait()
				return st
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.WithValue(context.Background(), requestKey{}, true)
			ctx, cancel := context.WithTimeout(ctx, budget)
			defer cancel()
			began := time.Now()
			err := e.store.Take(ctx, []sluice.Hit{{Key: fmt.Sprint("k", i%100), Limit: sluice.PerSecond(1_000_000), Cost: 1}}, make([]sluice.Result, 1))
			took := time.Since(began)
			st.sent.Add(1)
			if err == nil {
				st.decided.Add(1)
				if onDecided != nil {
					onDecided(time.Now())
				}
			} else {
				st.failed(err)
			}
			if took > budget+budgetSlack {
				st.slow.Add(1)
			}
			for {
				m := st.maxLatency.Load()
				if int64(took) <= m || st.maxLatency.CompareAndSwap(m, int64(took)) {
					break
				}
			}
		}()
	}
	wg.Wait()
	return st
}

// TestDecidedUnderLatency: a fresh store on a Redis some milliseconds
// away, inside the budget, decides (nearly) every call from the start,
// without a reconnect storm, and no call runs a handshake. It logs the
// decided share per latency.
//
// A fresh store's first calls cannot all be decided: a connection's set-up
// takes two round trips (the handshake, then a PING with the scripts
// loaded), and a call arriving before it is ready has less than a round
// trip left when it is: such calls fail at once, unambiguously, and never
// open the breaker. At +20 ms they are the first 10 to 25 ms of calls, so
// the run lasts long enough that the share measures the steady state too.
//
// The share, the connections opened and the calls' latency measure the
// machine as much as the store (the scheduler keeping up with the timers
// of a thousand calls a second), so they are asserted, and every latency
// run, only with SLUICE_TIMING=1, which .ci/test sets when the machine is
// quiet; otherwise one short run checks that no call pays a handshake.
func TestDecidedUnderLatency(t *testing.T) {
	timing := os.Getenv("SLUICE_TIMING") != ""
	cases := []struct {
		latency  time.Duration
		off      bool    // coalescing off
		minShare float64 // 0: only reported
	}{
		{5 * time.Millisecond, false, 0.99},
		{20 * time.Millisecond, false, 0.99},
		{40 * time.Millisecond, false, 0},
		{20 * time.Millisecond, true, 0},
	}
	if !timing {
		cases = cases[:1]
		cases[0].minShare = 0
	}
	for _, tc := range cases {
		name := fmt.Sprint("+", tc.latency)
		var cfg redisstore.Config
		if tc.off {
			name, cfg.Coalesce = name+"/coalescing off", -1
		}
		t.Run(name, func(t *testing.T) {
			e := newConnEnvWith(t, tc.latency, cfg)
			run := 2 * time.Second
			switch {
			case !timing:
				run = time.Second
			case tc.minShare > 0:
				run = 4 * time.Second
			}
			st := e.load(run, nil, nil)
			conns := redisstore.Conns(e.store)
			t.Logf("%s: %v; %d connections opened for %d ready", name, st, e.px.Opened(), conns)
			switch {
			case tc.minShare == 0:
			case st.share() < tc.minShare:
				t.Errorf("decided %.2f %% of calls, want at least %.0f %%", st.share()*100, tc.minShare*100)
			case st.kind(sluice.ErrBreakerOpen) > 0:
				t.Errorf("the breaker opened: %d calls refused by it", st.kind(sluice.ErrBreakerOpen))
			}
			// Near the budget, calls time out and their connections are
			// replaced: the bound holds where calls fit in the budget, and
			// the scheduler keeps up (see the share above).
			if n := e.px.Opened(); conns == 0 || tc.minShare > 0 && timing && n > int64(2*conns) {
				t.Errorf("%d connections opened, want at most twice the %d ready connections", n, conns)
			}
			if n := e.spy.paid.Load(); n > 0 {
				t.Errorf("calls ran %d dials or handshakes", n)
			}
			if n := st.slow.Load(); n > 0 && timing {
				t.Errorf("%d calls took longer than budget + slack", n)
			}
		})
	}
}

// TestOverBudgetLatency: with Redis slower than the budget every call fails
// within it, none runs a handshake, and once the latency goes decisions
// resume within the breaker's open time plus a second.
func TestOverBudgetLatency(t *testing.T) {
	e := newConnEnv(t, 0)
	e.resume(t) // healthy
	e.px.SetLatency(faultproxy.Downstream, 100*time.Millisecond)
	st := e.load(time.Second, nil, nil)
	t.Logf("+100ms: %v", st)
	if n := st.slow.Load(); n > 0 {
		t.Errorf("%d calls took longer than budget + slack (slowest %v)", n, time.Duration(st.maxLatency.Load()))
	}
	if st.decided.Load() > 0 {
		t.Errorf("%d calls decided through 100 ms with a 50 ms budget", st.decided.Load())
	}
	if e.store.BreakerState() == sluice.BreakerClosed {
		t.Errorf("breaker closed under latency over the budget")
	}
	e.px.SetLatency(faultproxy.Downstream, 0)
	healed := time.Now()
	resumed := e.resume(t)
	t.Logf("decisions resumed %v after the latency went", resumed.Sub(healed))
	if d := resumed.Sub(healed); d > 500*time.Millisecond+time.Second {
		t.Errorf("decisions resumed %v after the latency went, want within the breaker's open time (500 ms) + 1 s", d)
	}
	if n := e.spy.paid.Load(); n > 0 {
		t.Errorf("calls ran %d dials or handshakes", n)
	}
}

// resume sends load until a call is decided and returns when the first
// was, or fails t after 5 s.
func (e *connEnv) resume(t *testing.T) time.Time {
	t.Helper()
	var first atomic.Pointer[time.Time]
	stop := make(chan struct{})
	var once sync.Once
	done := make(chan *loadStats, 1)
	go func() {
		done <- e.load(0, stop, func(at time.Time) {
			first.CompareAndSwap(nil, &at)
			once.Do(func() { close(stop) })
		})
	}()
	select {
	case st := <-done:
		if n := st.slow.Load(); n > 0 {
			t.Errorf("%d calls took longer than budget + slack while decisions resumed", n)
		}
	case <-time.After(5 * time.Second):
		once.Do(func() { close(stop) })
		<-done
		t.Fatal("no decision 5 s after the fault went")
	}
	return *first.Load()
}

// TestRedisRestartUnderLoad: kill redis-server under load and start it
// again on the same port, its script cache empty: calls fail within the
// budget meanwhile, decisions resume within the breaker's open time plus a
// second of the restart, and the script is loaded again on the way.
func TestRedisRestartUnderLoad(t *testing.T) {
	e := newConnEnv(t, 0)
	e.resume(t) // healthy
	stop := make(chan struct{})
	done := make(chan *loadStats, 1)
	go func() { done <- e.load(0, stop, nil) }()
	e.srv.Kill()
	time.Sleep(300 * time.Millisecond)
	e.srv.Restart()
	restarted := time.Now()
	close(stop)
	st := <-done
	t.Logf("during the outage: %v", st)
	if n := st.slow.Load(); n > 0 {
		t.Errorf("%d calls took longer than budget + slack during the outage (slowest %v)", n, time.Duration(st.maxLatency.Load()))
	}
	resumed := e.resume(t)
	t.Logf("decisions resumed %v after the restart", resumed.Sub(restarted))
	if d := resumed.Sub(restarted); d > 500*time.Millisecond+time.Second {
		t.Errorf("decisions resumed %v after the restart, want within the breaker's open time (500 ms) + 1 s", d)
	}
	direct := newClient(t, e.srv.Addr)
	if loads, evals := commandCalls(t, direct, "script|load")+commandCalls(t, direct, "script"), commandCalls(t, direct, "eval"); loads+evals == 0 {
		t.Errorf("the restarted server never received the script")
	}
	if n := e.spy.paid.Load(); n > 0 {
		t.Errorf("calls ran %d dials or handshakes", n)
	}
}

// TestCallsBeforeSetUpFailUnsent: calls made as a fresh store starts, on a
// Redis 40 ms away, wait for its first connection, which takes at least
// two round trips to set up (80 ms). With a budget of 100 ms they are left
// with less than a round trip when it is ready: they fail at once,
// unambiguously, since nothing was sent, and the breaker does not count
// them. Sent, they would time out.
func TestCallsBeforeSetUpFailUnsent(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  redisstore.Config
	}{
		{"coalescing", redisstore.Config{}},
		{"coalescing off", redisstore.Config{Coalesce: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const rtt, budget = 40 * time.Millisecond, 100 * time.Millisecond
			e := newConnEnvWith(t, rtt, tc.cfg)
			const calls = 30
			errs := make([]error, calls)
			var wg sync.WaitGroup
			for i := range calls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), requestKey{}, true), budget)
					defer cancel()
					errs[i] = e.store.Take(ctx, []sluice.Hit{{Key: fmt.Sprint("k", i), Limit: sluice.PerSecond(1000), Cost: 1}}, make([]sluice.Result, 1))
				}()
			}
			wg.Wait()
			failed := 0
			for _, err := range errs {
				switch {
				case err == nil:
				case sluice.IsAmbiguous(err) || !errors.Is(err, sluice.ErrTimeout):
					t.Errorf("a call made before the set-up failed with %v, want an unambiguous timeout", err)
				default:
					failed++
				}
			}
			// A call made at once needs the set-up's two round trips
			// and its own: 120 ms, over its budget.
			if failed == 0 {
				t.Errorf("every call made before the set-up was decided, want the first ones to fail")
			}
			if st := e.store.BreakerState(); st != sluice.BreakerClosed {
				t.Errorf("breaker %v, want closed", st)
			}
			t.Logf("%d of %d calls failed unsent", failed, calls)
		})
	}
}

// TestSetUpLoadsScripts: a store's first call on a server without its
// scripts finds them loaded by the connection's set-up: no NOSCRIPT.
func TestSetUpLoadsScripts(t *testing.T) {
	t.Parallel() // its own redis-server; no package state, no timing
	srv := redistest.Start(t)
	direct := newClient(t, srv.Addr)
	if err := direct.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	client, err := redisstore.NewClient(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	s := newStoreWith(t, client, nil, redisstore.Config{StartupCheckTimeout: -1}) // no background preload
	err = s.Take(context.Background(), []sluice.Hit{{Key: "k", Limit: sluice.PerSecond(10), Cost: 1}}, make([]sluice.Result, 1))
	if err != nil {
		t.Fatal(err)
	}
	if n := s.ScriptReloads(); n != 0 {
		t.Errorf("%d script reloads, want 0", n)
	}
	if n := commandCalls(t, direct, "eval"); n != 0 {
		t.Errorf("%d EVAL calls, want 0", n)
	}
}
