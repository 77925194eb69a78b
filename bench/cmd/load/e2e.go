package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/bench"
	"github.com/sluicehq/sluice/bench/internal/hist"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
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
)

// E2EServers are the servers compared end to end: the same handler without
// a limiter, and behind the sluice middleware on each store.
var E2EServers = []string{"none", "memstore", "redis"}

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
	mux := http.NewServeMux()
	mux.HandleFunc(statsPath, func(w http.ResponseWriter, _ *http.Request) {
		m := map[string]int64{}
		for i := range outcomes {
			if n := outcomes[i].Load(); n > 0 {
				m[sluice.Outcome(i).String()] = n
			}
		}
		_ = json.NewEncoder(w).Encode(m)
	})
	if store == "none" {
		mux.Handle("/", h)
		return mux, func() {}, nil
	}
	spec := bench.HighLimit(nil)
	set, err := rules.New(rules.Rule{
		Name: "per-api-key", Key: keyfunc.Must(keyfunc.APIKey("X-API-Key")), KeyKind: "api_key",
		Limit: sluice.Limit{Rate: spec.Rate, Period: spec.Period, Burst: spec.Burst},
	})
	if err != nil {
		return nil, nil, err
	}
	var st sluice.Store
	cleanup := func() {}
	switch store {
	case "memstore":
		m := memstore.New(memstore.Config{})
		st, cleanup = m, func() { m.Close() }
	case "redis":
		pool, _ := strconv.Atoi(os.Getenv(poolEnv))
		env := &bench.Env{Addr: redisAddr, PoolSize: pool}
		opt := env.Options()
		client := redis.NewClient(opt)
		r, err := redisstore.New(client, redisstore.Config{})
		if err != nil {
			return nil, nil, err
		}
		st, cleanup = r, func() { r.Close(); client.Close() }
	default:
		return nil, nil, fmt.Errorf("unknown store %q", store)
	}
	observe := sluice.ObserverFunc(func(_ context.Context, d sluice.Decision) {
		outcomes[min(int(d.Outcome), len(outcomes)-1)].Add(1)
	})
	lim, err := middleware.New(st, set, middleware.WithObserver(observe),
		middleware.WithLogger(slog.New(slog.DiscardHandler))) // counted above instead
	if err != nil {
		return nil, nil, err
	}
	mux.Handle("/", lim.Handler(h))
	return mux, cleanup, nil
}

// child is a running server process.
type child struct {
	name  string
	addr  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func startServer(store, redisAddr string, pool int) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), roleEnv+"=server", storeEnv+"="+store, redisEnv+"="+redisAddr,
		poolEnv+"="+strconv.Itoa(pool))
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

// stats returns the server's decision counts by outcome.
func (c *child) stats(ctx context.Context, l *httpLoad) (map[string]int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.addr+statsPath, nil)
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

// httpLoad is a load generator over one shared client.
type httpLoad struct {
	client *http.Client
	keys   []string
	next   atomic.Int64
}

func newHTTPLoad(conns int, keys []string) *httpLoad {
	tr := &http.Transport{
		Proxy:               nil, // loopback only, never through a proxy
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
	}
	return &httpLoad{client: &http.Client{Transport: tr, Timeout: 5 * time.Second}, keys: keys}
}

func (l *httpLoad) close() { l.client.CloseIdleConnections() }

// one sends one request and reports its status.
func (l *httpLoad) one(ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	i := l.next.Add(1)
	req.Header.Set("X-API-Key", l.keys[int(i)%len(l.keys)])
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
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

// openLoop sends rate requests a second on a fixed schedule for d, whatever
// the server's latency. Each request's latency counts from when the schedule
// said to send it, so a stall shows in the figures instead of silently
// slowing the load (no coordinated omission). With a nil tally nothing is
// recorded (warm-up).
func (l *httpLoad) openLoop(ctx context.Context, url string, rate, workers int, d time.Duration, t *tally) {
	interval := time.Second / time.Duration(rate)
	total := int(d / interval)
	jobs := make(chan time.Time, total)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var w worker
			for due := range jobs {
				status, err := l.one(ctx, url)
				w.record(time.Since(due), status, err)
			}
			t.add(&w.h, w.n, w.errs, w.non200, w.first)
		}()
	}
	start := time.Now()
	for i := 0; i < total && ctx.Err() == nil; {
		now := time.Now()
		for ; i < total; i++ {
			due := start.Add(time.Duration(i) * interval)
			if due.After(now) {
				break
			}
			jobs <- due
		}
		if i < total {
			time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		}
	}
	close(jobs)
	wg.Wait()
	if t != nil {
		t.elapsed += time.Since(start)
	}
}

// closedLoop runs conc clients for d, each sending its next request as soon
// as the last one is answered: the server's saturation throughput. With a
// nil tally nothing is recorded (warm-up).
func (l *httpLoad) closedLoop(ctx context.Context, url string, conc int, d time.Duration, t *tally) {
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var w worker
			for ctx.Err() == nil {
				t0 := time.Now()
				if t0.After(deadline) {
					break
				}
				status, err := l.one(ctx, url)
				w.record(time.Since(t0), status, err)
			}
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
		c, err := startServer(name, redisAddr, cfg.pool)
		if err != nil {
			return nil, err
		}
		servers = append(servers, c)
	}
	gen := newHTTPLoad(cfg.e2eWorkers+cfg.e2eConc, bench.Keys(cfg.keys))
	defer gen.close()
	// Each load in turn; within a load every server gets a warm-up, then a
	// slice each in turn, cfg.rounds times, so drifting background load
	// hits every server alike.
	type loadKind struct {
		mode string
		rate int
		run  func(url string, d time.Duration, t *tally)
	}
	var loads []loadKind
	for _, rate := range cfg.e2eRates {
		loads = append(loads, loadKind{"open", rate, func(url string, d time.Duration, t *tally) {
			gen.openLoop(ctx, url, rate, cfg.e2eWorkers, d, t)
		}})
	}
	loads = append(loads, loadKind{"closed", 0, func(url string, d time.Duration, t *tally) {
		gen.closedLoop(ctx, url, cfg.e2eConc, d, t)
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
			before[i], _ = s.stats(ctx, gen)
			ld.run("http://"+s.addr+"/", cfg.warmup, nil)
		}
		for range cfg.rounds {
			for i, s := range servers {
				if ctx.Err() == nil {
					ld.run("http://"+s.addr+"/", cfg.e2eDuration/time.Duration(cfg.rounds), &tallies[i])
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
			if after, err := s.stats(ctx, gen); err == nil && before[i] != nil {
				r.StoreFailures = after["failed_open"] + after["failed_closed"] + after["local"] -
					before[i]["failed_open"] - before[i]["failed_closed"] - before[i]["local"]
			}
			out = append(out, r)
		}
	}
	return out, ctx.Err()
}
