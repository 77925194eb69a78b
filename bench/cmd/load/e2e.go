package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/sluicehq/sluice/decide"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/bench"
	"github.com/sluicehq/sluice/bench/internal/hist"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/lease"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/redisstore"
)

// The end-to-end server runs in a child process (this same binary), so the
// load generator and the server do not share a Go runtime, as in production.
const (
	roleEnv  = "SLUICE_BENCH_ROLE"
	storeEnv = "SLUICE_BENCH_STORE"
	redisEnv = "SLUICE_BENCH_REDIS"
	poolEnv  = "SLUICE_BENCH_POOL"
	keysEnv  = "SLUICE_BENCH_KEYS"
)

// E2EServers are the servers compared end to end: the same handler without
// a limiter, behind the sluice middleware on each store, behind the floor
// middleware, and the A/A control.
var E2EServers = []string{"none", "memstore", e2eLease, "redis", "redis-coalesced", e2eFloor, e2eControl}

// e2eLease is the sluice middleware on a lease store over the Redis store
// (store/lease), its rule reading the API key as the others' does but
// putting every request in one bucket: the hot key leases are for, served
// in process once a lease holds tokens.
const e2eLease = "lease"

// e2eFloor is the same handler behind the least a Redis limiter can do: a
// middleware of a few lines around the plain-Lua baseline peer, one EVALSHA
// per request on the same client settings. What it adds to "none" is what
// one Redis round trip per request costs on this machine; what sluice's
// "redis" adds beyond it is sluice's own.
const e2eFloor = "plain-lua"

// e2eControl is a second server without a limiter, measured in the same
// interleaved rounds as the others: what it "adds" to the first is this
// run's noise in every added-latency figure.
const e2eControl = "none (again)"

// serverMain is the child process: it serves on a free loopback port,
// prints "LISTEN addr", and exits when its standard input closes (the
// parent finished, or died).
func serverMain() {
	h, cleanup, err := serverHandler(os.Getenv(storeEnv), os.Getenv(redisEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(2)
	}
	defer cleanup()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(2)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = srv.Close()
	}()
	fmt.Printf("LISTEN %s\n", ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// statsPath serves the server's decision counts, outside the middleware.
const statsPath = "/__bench/stats"

// serverHandler is a trivial handler, alone or behind the middleware with
// one rule per API key (10k keys in the load), limit high enough to admit.
// The middleware's decisions are counted by outcome and served at statsPath,
// so the report can say how many requests the store failed to decide within
// the middleware's budget (and were let through by on_fail: open).
func serverHandler(store, redisAddr string) (http.Handler, func(), error) {
	ok := []byte("ok\n")
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(ok)
	})
	var outcomes [8]atomic.Int64
	var mw mwTimes
	mux := http.NewServeMux()
	mux.HandleFunc(statsPath, func(w http.ResponseWriter, r *http.Request) {
		m := map[string]int64{}
		for i := range outcomes {
			if n := outcomes[i].Load(); n > 0 {
				m[sluice.Outcome(i).String()] = n
			}
		}
		mw.report(m, r.URL.Query().Has("reset"))
		m["cpu_ns"] = int64(processCPU())
		_ = json.NewEncoder(w).Encode(m)
	})
	if store == "none" || store == e2eControl {
		mux.Handle("/", h)
		return mux, func() {}, nil
	}
	pool, _ := strconv.Atoi(os.Getenv(poolEnv))
	env := &bench.Env{Addr: redisAddr, PoolSize: pool}
	if store == e2eFloor {
		n, _ := strconv.Atoi(os.Getenv(keysEnv))
		floor, err := floorMiddleware(env, bench.HighLimit(bench.Keys(n)), outcomes[:])
		if err != nil {
			return nil, nil, err
		}
		mux.Handle("/", mw.around(floor, h))
		return mux, func() { _ = env.Close() }, nil
	}
	spec := bench.HighLimit(nil)
	rule := rules.Rule{
		Name: "per-api-key", Key: keyfunc.APIKey("X-API-Key"),
		Limit: sluice.Limit{Rate: spec.Rate, Period: spec.Period, Burst: spec.Burst},
	}
	if store == e2eLease {
		// The API key is read as by the other servers' rule, and every
		// request goes to one bucket: only the store differs.
		apiKey := rule.Key
		rule.Key = keyfunc.New(apiKey.Kind(), func(r *http.Request) (string, error) {
			if _, err := apiKey.Identity(r); err != nil {
				return "", err
			}
			return "hot", nil
		})
		rule.Lease = sluice.LeasePolicy{Enabled: true}
	}
	set, err := rules.New(rule)
	if err != nil {
		return nil, nil, err
	}
	var st sluice.Store
	var cleanup func()
	switch store {
	case "memstore":
		m := memstore.New(memstore.Config{})
		st, cleanup = m, func() { m.Close(context.Background()) }
	case e2eLease:
		r, err := redisstore.New(env.NewClient(), redisstore.Config{Secret: bench.Secret, Coalesce: -1})
		if err != nil {
			return nil, nil, err
		}
		l, err := lease.New(r, lease.Config{Instances: 1, MaxLease: 4096, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return nil, nil, err
		}
		st, cleanup = l, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = l.Close(ctx)
			r.Close(context.Background())
			_ = env.Close()
		}
	case "redis", "redis-coalesced":
		client := env.NewClient() // as the floor's: the same options and round-trip hook
		// One script call per request unless coalesced.
		cfg := redisstore.Config{Secret: bench.Secret, Coalesce: -1}
		if store == "redis-coalesced" {
			cfg.Coalesce = 64
		}
		r, err := redisstore.New(client, cfg)
		if err != nil {
			return nil, nil, err
		}
		st, cleanup = r, func() { r.Close(context.Background()); _ = env.Close() }
	default:
		return nil, nil, fmt.Errorf("unknown store %q", store)
	}
	observe := sluice.ObserverFunc(func(_ context.Context, d sluice.Decision) {
		outcomes[min(int(d.Outcome), len(outcomes)-1)].Add(1)
	})
	lim, err := middleware.New(st, set, decide.WithObserver(observe),
		decide.WithLogger(slog.New(slog.DiscardHandler))) // counted above instead
	if err != nil {
		return nil, nil, err
	}
	mux.Handle("/", mw.around(lim.Handler, h))
	return mux, cleanup, nil
}

// floorMiddleware is e2eFloor's middleware: the X-API-Key header's index in
// spec's keys (400 for a key not there), one check of the plain-Lua peer
// configured with spec, 429 when it refuses, and on a Redis error the
// request let through and counted as failed open in outcomes (indexed by
// sluice.Outcome), as sluice's on_fail: open does.
func floorMiddleware(env *bench.Env, spec bench.Spec, outcomes []atomic.Int64) (func(http.Handler) http.Handler, error) {
	index := make(map[string]int, len(spec.Keys))
	for i, k := range spec.Keys {
		index[k] = i
	}
	var peer bench.RedisPeer
	for _, p := range bench.RedisPeers() {
		if p.Name == "plain-lua" {
			peer = p
		}
	}
	if peer.New == nil {
		return nil, errors.New("no plain-lua peer")
	}
	lim, err := bench.NewRedisLimiter(peer, env, spec)
	if err != nil {
		return nil, err
	}
	check := lim.NewWorker() // plain-lua's worker keeps no scratch: one serves every request
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			i, ok := index[r.Header.Get("X-API-Key")]
			if !ok {
				http.Error(w, "unknown key", http.StatusBadRequest)
				return
			}
			allowed, err := check(r.Context(), i)
			switch {
			case err != nil:
				outcomes[sluice.OutcomeFailedOpen].Add(1)
			case !allowed:
				http.Error(w, "limited", http.StatusTooManyRequests)
				return
			default:
				outcomes[sluice.OutcomeAllowed].Add(1)
			}
			next.ServeHTTP(w, r)
		})
	}, nil
}

// mwTimes measures, inside the server, the time from the request entering
// the middleware to the middleware calling the handler: the latency the
// middleware adds, free of the load generator's and the network's noise.
type mwTimes struct {
	mu sync.Mutex
	h  hist.Histogram
}

type mwStartKey struct{}

// around returns mw(h) with the time spent in mw recorded.
func (t *mwTimes) around(mw func(http.Handler) http.Handler, h http.Handler) http.Handler {
	inner := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t0, ok := r.Context().Value(mwStartKey{}).(*time.Time); ok {
			d := time.Since(*t0)
			t.mu.Lock()
			t.h.Record(d)
			t.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := new(time.Time)
		r = r.WithContext(context.WithValue(r.Context(), mwStartKey{}, t0))
		*t0 = time.Now()
		inner.ServeHTTP(w, r)
	})
}

// report adds the recorded quantiles to m (in ns), and forgets them if
// reset is set.
func (t *mwTimes) report(m map[string]int64, reset bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.h.Count() > 0 {
		m["mw_count"] = int64(t.h.Count())
		m["mw_p50_ns"] = int64(t.h.Quantile(0.5))
		m["mw_p99_ns"] = int64(t.h.Quantile(0.99))
		m["mw_p999_ns"] = int64(t.h.Quantile(0.999))
	}
	if reset {
		t.h = hist.Histogram{}
	}
}

// child is a running server process.
type child struct {
	name  string
	addr  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startServer starts the server named store on the Redis at redisAddr, with
// a go-redis pool of pool connections and a key space of keys.
func startServer(store, redisAddr string, pool, keys int) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), roleEnv+"=server", storeEnv+"="+store, redisEnv+"="+redisAddr,
		poolEnv+"="+strconv.Itoa(pool), keysEnv+"="+strconv.Itoa(keys))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{name: store, cmd: cmd, stdin: stdin}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case s := <-line:
		addr, ok := strings.CutPrefix(strings.TrimSpace(s), "LISTEN ")
		if !ok || !strings.HasPrefix(addr, "127.0.0.1:") {
			c.stop()
			return nil, fmt.Errorf("server %s: unexpected first line %q", store, s)
		}
		c.addr = addr
		return c, nil
	case <-time.After(10 * time.Second):
		c.stop()
		return nil, fmt.Errorf("server %s did not start", store)
	}
}

// stop closes the child's stdin (it exits by itself), and kills it by its
// pid if it has not exited after 3 s.
func (c *child) stop() {
	_ = c.stdin.Close()
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// stats returns the server's decision counts by outcome and the quantiles
// of the time spent in the middleware since the last reset; reset starts
// the latter afresh.
func (c *child) stats(ctx context.Context, l *httpLoad, reset bool) (map[string]int64, error) {
	url := "http://" + c.addr + statsPath
	if reset {
		url += "?reset"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	m := map[string]int64{}
	return m, json.NewDecoder(resp.Body).Decode(&m)
}

// httpLoad is the load generator: the requests go over raw keep-alive
// connections (rawConn), one per sender; client only reads the servers'
// decision counts, outside the measurement.
type httpLoad struct {
	client *http.Client
	keys   []string
	next   atomic.Int64
}

func newHTTPLoad(keys []string) *httpLoad {
	tr := &http.Transport{Proxy: nil} // loopback only, never through a proxy
	return &httpLoad{client: &http.Client{Transport: tr, Timeout: 5 * time.Second}, keys: keys}
}

func (l *httpLoad) close() { l.client.CloseIdleConnections() }

// key returns the API key of the next request: the senders walk the key
// space together.
func (l *httpLoad) key() string {
	return l.keys[int(l.next.Add(1))%len(l.keys)]
}

// tally accumulates one (server, load) measurement over its slices.
type tally struct {
	mu       sync.Mutex
	h        hist.Histogram
	requests int64
	errors   int64
	non200   int64
	first    string
	elapsed  time.Duration
}

func (t *tally) add(h *hist.Histogram, requests, errs, non200 int64, first string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.h.Merge(h)
	t.requests += requests
	t.errors += errs
	t.non200 += non200
	if t.first == "" {
		t.first = first
	}
}

func (t *tally) run(server, mode string) E2ERun {
	r := E2ERun{Server: server, Mode: mode, Elapsed: t.elapsed, Requests: t.requests, Errors: t.errors,
		Non200: t.non200, FirstError: t.first,
		P50: t.h.Quantile(0.5), P99: t.h.Quantile(0.99), P999: t.h.Quantile(0.999), Max: t.h.Max()}
	if t.elapsed > 0 {
		r.PerSec = float64(t.requests) / t.elapsed.Seconds()
	}
	return r
}

// worker records one sender's requests.
type worker struct {
	h               hist.Histogram
	n, errs, non200 int64
	first           string
}

func (w *worker) record(lat time.Duration, status int, err error) {
	w.n++
	w.h.Record(lat)
	switch {
	case err != nil:
		w.errs++
		if w.first == "" {
			w.first = err.Error()
		}
	case status != http.StatusOK:
		w.non200++
	}
}

// openLoop sends rate requests a second to addr for d on a fixed schedule,
// whatever the server's latency, over conns connections: connection i sends
// the requests due at start + (k·conns + i)/rate. No coordinated omission:
// a request whose connection was still busy with the previous one at its
// due time counts from that due time, so a slow server shows in the figures
// instead of silently slowing the load. A request whose connection was idle
// counts from when it was sent: Go's timers wake up to a millisecond late
// on an idle machine, and that lateness is the load generator's, not the
// server's. With a nil tally nothing is recorded (warm-up).
func (l *httpLoad) openLoop(ctx context.Context, addr string, rate, conns int, d time.Duration, t *tally) {
	interval := time.Second / time.Duration(rate)
	l.connections(addr, conns, d, t, func(i int, start, end time.Time, rc *rawConn, w *worker) {
		var prevDone time.Time
		for k := 0; ctx.Err() == nil; k++ {
			due := start.Add(time.Duration(k*conns+i) * interval)
			if !due.Before(end) {
				return
			}
			if wait := time.Until(due); wait > 0 {
				time.Sleep(wait)
			}
			began := due
			if !prevDone.After(due) { // idle at its due time: count from the send
				began = time.Now()
			}
			status, err := rc.get(l.key())
			prevDone = time.Now()
			w.record(prevDone.Sub(began), status, err)
		}
	})
}

// closedLoop runs conc clients against addr for d, each sending its next
// request as soon as the last one is answered: the server's saturation
// throughput. With a nil tally nothing is recorded (warm-up).
func (l *httpLoad) closedLoop(ctx context.Context, addr string, conc int, d time.Duration, t *tally) {
	l.connections(addr, conc, d, t, func(_ int, _, end time.Time, rc *rawConn, w *worker) {
		for ctx.Err() == nil {
			t0 := time.Now()
			if t0.After(end) {
				return
			}
			status, err := rc.get(l.key())
			w.record(time.Since(t0), status, err)
		}
	})
}

// connections runs send on n connections to addr at once, the i-th on its
// own goroutine with its own connection and worker, for a load of d that
// starts now, then adds what the workers recorded and the time taken to t
// (unless t is nil).
func (l *httpLoad) connections(addr string, n int, d time.Duration, t *tally,
	send func(i int, start, end time.Time, rc *rawConn, w *worker)) {
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc := newRawConn(addr)
			defer rc.close()
			var w worker
			send(i, start, end, rc, &w)
			t.add(&w.h, w.n, w.errs, w.non200, w.first)
		}()
	}
	wg.Wait()
	if t != nil {
		t.elapsed += time.Since(start)
	}
}

// runE2E starts one server per variant, then runs the open-loop load on
// each in turn and the closed-loop load on each in turn, so drifting
// background load hits every variant alike.
func runE2E(ctx context.Context, cfg config, redisAddr string) ([]E2ERun, error) {
	var servers []*child
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	for _, name := range E2EServers {
		c, err := startServer(name, redisAddr, cfg.pool, cfg.keys)
		if err != nil {
			return nil, err
		}
		servers = append(servers, c)
	}
	gen := newHTTPLoad(bench.Keys(cfg.keys))
	defer gen.close()
	// Each load in turn; within a load every server gets a warm-up, then a
	// slice each in turn, cfg.rounds times, so drifting background load
	// hits every server alike.
	type loadKind struct {
		mode string
		rate int
		run  func(addr string, d time.Duration, t *tally)
	}
	var loads []loadKind
	for _, rate := range cfg.e2eRates {
		loads = append(loads, loadKind{"open", rate, func(addr string, d time.Duration, t *tally) {
			gen.openLoop(ctx, addr, rate, cfg.e2eWorkers, d, t)
		}})
	}
	loads = append(loads, loadKind{"closed", 0, func(addr string, d time.Duration, t *tally) {
		gen.closedLoop(ctx, addr, cfg.e2eConc, d, t)
	}})
	var out []E2ERun
	for _, ld := range loads {
		if ctx.Err() != nil {
			break
		}
		if ld.mode == "open" {
			logf("e2e open loop at %d req/s: %d servers, %d rounds", ld.rate, len(servers), cfg.rounds)
		} else {
			logf("e2e closed loop with %d clients: %d servers, %d rounds", cfg.e2eConc, len(servers), cfg.rounds)
		}
		tallies := make([]tally, len(servers))
		before := make([]map[string]int64, len(servers))
		for i, s := range servers {
			before[i], _ = s.stats(ctx, gen, false)
			ld.run(s.addr, cfg.warmup, nil)
		}
		cpuStart := make([]int64, len(servers))
		for i, s := range servers { // the in-server times and CPU leave the warm-ups out
			if m, err := s.stats(ctx, gen, true); err == nil {
				cpuStart[i] = m["cpu_ns"]
			}
		}
		for range cfg.rounds {
			for i, s := range servers {
				if ctx.Err() == nil {
					ld.run(s.addr, cfg.e2eDuration/time.Duration(cfg.rounds), &tallies[i])
				}
			}
		}
		for i, s := range servers {
			r := tallies[i].run(s.name, ld.mode)
			r.Rate = ld.rate
			r.Concurrency = cfg.e2eConc
			if ld.mode == "open" {
				r.Concurrency = cfg.e2eWorkers
			}
			after, err := s.stats(ctx, gen, false)
			if err == nil {
				r.MiddlewareP50 = time.Duration(after["mw_p50_ns"])
				r.MiddlewareP99 = time.Duration(after["mw_p99_ns"])
				r.MiddlewareP999 = time.Duration(after["mw_p999_ns"])
				if cpuStart[i] > 0 && r.Requests > 0 {
					r.ServerCPU = time.Duration((after["cpu_ns"] - cpuStart[i]) / r.Requests)
				}
			}
			if err == nil && before[i] != nil {
				r.StoreFailures = after["failed_open"] + after["failed_closed"] + after["local"] -
					before[i]["failed_open"] - before[i]["failed_closed"] - before[i]["local"]
			}
			out = append(out, r)
		}
	}
	return out, ctx.Err()
}

// isSluiceServer reports whether the end-to-end server named s runs the sluice
// middleware: every one but "none", its A/A control and the floor.
func isSluiceServer(s string) bool { return s != "none" && s != e2eControl && s != e2eFloor }
