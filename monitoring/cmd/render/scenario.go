package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/sluicehq/sluice/decide"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/faultproxy"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/metrics"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/admin"
	"github.com/sluicehq/sluice/store/lease"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/redisstore"
)

// budget is the latency budget of each store call.
const budget = 50 * time.Millisecond

// A phase is a stretch of the run with one state of the clients and of
// Redis. Its share is its part of the run's length.
type phase struct {
	Name   string
	share  float64
	greedy bool                    // the greedy clients send three times their rate
	fault  func(*faultproxy.Proxy) // applied to the proxy when the phase starts
	events func(*system) error     // what happens mid-phase
}

// phases are the run: normal traffic, Redis slower than the budget, two
// clients over their limit, Redis black-holed, and recovery. Scripts are
// flushed, bucket keys overwritten and buckets reset twice each, so that
// the counters these create (from their first event) show an increase.
var phases = []phase{
	{Name: "normal", share: 0.2, fault: (*faultproxy.Proxy).Heal, events: func(s *system) error {
		return errors.Join(s.flushScripts(), s.corrupt())
	}},
	{Name: "Redis +80 ms", share: 0.2, fault: func(p *faultproxy.Proxy) { p.SetLatency(faultproxy.Downstream, 80*time.Millisecond) }},
	{Name: "over limit", share: 0.2, greedy: true, fault: (*faultproxy.Proxy).Heal, events: func(s *system) error {
		return s.operator("erin")
	}},
	{Name: "Redis black hole", share: 0.15, fault: func(p *faultproxy.Proxy) { p.BlackHole(faultproxy.Upstream, true) }},
	{Name: "recovery", share: 0.25, fault: (*faultproxy.Proxy).Heal, events: func(s *system) error {
		return errors.Join(s.flushScripts(), s.corrupt(), s.operator("dave"))
	}},
}

// span is when a phase ran.
type span struct {
	Name       string
	Start, End time.Time
}

// system is the service under load: a handler behind sluice's middleware
// on a Redis store reached through a fault proxy, and its metrics.
type system struct {
	redis *redistest.Server
	proxy *faultproxy.Proxy
	srv   *httptest.Server
	admin http.Handler
	reg   *prometheus.Registry
	// closers stop what start started, in reverse order (see close).
	closers []func()
}

// start builds the system on a redis-server of its own.
func start(log *slog.Logger) (*system, error) {
	rs, err := redistest.Launch(redistest.Options{})
	if err != nil {
		return nil, err
	}
	s := &system{redis: rs}
	s.onClose(rs.Stop)
	if err := s.build(log); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// onClose adds f to what close stops.
func (s *system) onClose(f func()) { s.closers = append(s.closers, f) }

// close stops everything the system started, the last started first.
func (s *system) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

// build starts the fault proxy in front of s.redis, the metrics, the
// stores and the HTTP server.
func (s *system) build(log *slog.Logger) error {
	var err error
	if s.proxy, err = faultproxy.New(s.redis.Addr); err != nil {
		return err
	}
	s.onClose(s.proxy.Close)
	s.reg = prometheus.NewRegistry()
	collector, err := metrics.New(metrics.Config{Registerer: s.reg})
	if err != nil {
		return err
	}
	leases, err := metrics.NewLease(metrics.LeaseConfig{Registerer: s.reg})
	if err != nil {
		return err
	}
	leased, err := s.redisStore(log, collector, leases)
	if err != nil {
		return err
	}
	local := memstore.New(memstore.Config{MaxBuckets: 64, Events: collector})
	s.onClose(func() { local.Close(context.Background()) })
	handler, err := s.handler(log, collector, leased, local)
	if err != nil {
		return err
	}
	s.srv = httptest.NewServer(handler)
	s.onClose(s.srv.Close)
	return nil
}

// redisStore returns the leased store on Redis, reached through the
// fault proxy with the budget as every timeout.
func (s *system) redisStore(log *slog.Logger, collector *metrics.Collector, leases *metrics.LeaseCollector) (*lease.Store, error) {
	opt, err := redisstore.ClientOptions(s.proxy.Addr)
	if err != nil {
		return nil, err
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = budget, budget, budget, budget
	opt.MinIdleConns = 8
	client := redis.NewClient(opt)
	s.onClose(func() { client.Close() })
	shared, err := redisstore.New(client, redisstore.Config{
		Secret: []byte("dashboard-render-secret-0123456789"), Logger: log, Events: collector,
		Coalesce: 64, Endpoint: "redis",
	})
	if err != nil {
		return nil, err
	}
	s.onClose(func() { shared.Close(context.Background()) })
	leased, err := lease.New(shared, lease.Config{Instances: 4, Observer: leases, Logger: log, TTL: 500 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	s.onClose(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = leased.Close(ctx)
	})
	return leased, nil
}

// handler returns the service: /browse limited per visitor on the local
// store, the rest by the rules on the leased one; and sets s.admin, the
// operator API on the leased store.
func (s *system) handler(log *slog.Logger, collector *metrics.Collector, leased, local sluice.Store) (http.Handler, error) {
	set, err := rules.New(
		// A client refused 20 times within a second is blocked for one.
		rules.Rule{Name: "per-client", Key: keyfunc.Header("X-Client"), Limit: sluice.PerSecond(40).WithBurst(40), OnFail: rules.FailLocal,
			Penalty: &rules.Penalty{Block: time.Second, After: 20}},
		rules.Rule{
			Name: "per-api-key", Key: keyfunc.APIKey("X-API-Key"), Limit: sluice.PerSecond(200).WithBurst(200),
			Lease: sluice.LeasePolicy{Enabled: true, HotKeys: sluice.HotKeyPolicy{Threshold: 10, Lease: true}},
		},
		rules.Rule{Name: "global", Key: keyfunc.Global(), Limit: sluice.PerSecond(200).WithBurst(100), OnFail: rules.FailClosed,
			Match: func(r *http.Request) bool { return r.URL.Path == "/api/checkout" }},
	)
	if err != nil {
		return nil, err
	}
	visitors, err := rules.New(rules.Rule{Name: "per-visitor", Key: keyfunc.Header("X-Visitor"), Limit: sluice.PerSecond(5)})
	if err != nil {
		return nil, err
	}
	remote, err := middleware.New(leased, set, decide.WithObserver(collector), decide.WithBudget(budget),
		decide.WithInstances(4), decide.WithLogger(log))
	if err != nil {
		return nil, err
	}
	inProcess, err := middleware.New(local, visitors, decide.WithObserver(collector), decide.WithLogger(log))
	if err != nil {
		return nil, err
	}
	if s.admin, err = admin.New(leased, set, admin.WithObserver(collector), admin.WithLogger(log),
		admin.WithHashSecret([]byte("dashboard-render-secret-0123456789"))); err != nil {
		return nil, err
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux := http.NewServeMux()
	mux.Handle("/browse", inProcess.Handler(ok))
	mux.Handle("/", planned(remote.Handler(ok)))
	return mux, nil
}

// planned sets the checkout's requests a limit of their own for
// per-client, as an application that loaded the customer's plan does
// (sluice.WithLimit): above what the rule allows, so the limiter caps it
// and counts it.
func planned(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/checkout" {
			r = r.WithContext(sluice.WithLimit(r.Context(), "per-client", sluice.PerSecond(80).WithBurst(80)))
		}
		next.ServeHTTP(w, r)
	})
}

// operator resets a client's bucket through the operator API, as an
// operator unblocking a customer would: again, for up to 3 s, while the
// store cannot answer (just after an outage it may still be reconnecting).
func (s *system) operator(client string) error {
	body := fmt.Sprintf(`{"rule":"per-client","identity":%q}`, client)
	deadline := time.Now().Add(3 * time.Second)
	for {
		rec := httptest.NewRecorder()
		s.admin.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/reset", strings.NewReader(body)))
		switch {
		case rec.Code == http.StatusOK:
			return nil
		case rec.Code < 500 || time.Now().After(deadline):
			return fmt.Errorf("reset %s: %d %s", client, rec.Code, rec.Body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// corrupt overwrites every bucket key in Redis with a value that is not a
// bucket's state, as a stray writer would; the store heals them.
func (s *system) corrupt() error {
	keys, err := redistest.Do(s.redis.Addr, "KEYS", "sl:*")
	if err != nil {
		return err
	}
	list, _ := keys.([]any)
	for _, k := range list {
		if key, ok := k.(string); ok {
			if _, err := redistest.Do(s.redis.Addr, "SET", key, "not-a-bucket", "EX", "60"); err != nil {
				return err
			}
		}
	}
	return nil
}

// A loadClient is one of the clients that send the load.
type loadClient struct {
	name   string
	rate   float64 // requests per second
	apiKey string
	greedy bool
	bursty bool // sends only one second in three
}

// loadClients are the clients of the load, about 200 requests a second.
var loadClients = []loadClient{
	{"alice", 30, "", false, false}, {"bob", 30, "", false, false}, {"carol", 30, "k-partner", false, false},
	{"dave", 35, "k-partner", true, false}, {"erin", 35, "", true, false}, {"frank", 30, "k-partner", false, false},
	{"grace", 60, "k-trial", false, true}, // its last leases of a burst go back unused
}

// load sends requests from clients at their rates until ctx ends; greedy
// reports whether the greedy clients send three times their rate.
func (s *system) load(ctx context.Context, greedy func() bool) {
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	var wg sync.WaitGroup
	for i, c := range loadClients {
		for w := range 2 { // two connections per client
			wg.Go(func() { s.drive(ctx, hc, c, rand.New(rand.NewPCG(uint64(i), uint64(w))), greedy) })
		}
	}
	wg.Wait()
}

// drive sends c's requests on one of its two connections, at half its
// rate, until ctx ends.
func (s *system) drive(ctx context.Context, hc *http.Client, c loadClient, rng *rand.Rand, greedy func() bool) {
	next := time.Now()
	for ctx.Err() == nil {
		rate := c.rate / 2
		if c.greedy && greedy() {
			rate *= 3
		}
		if c.bursty && time.Now().Second()%3 != 0 {
			time.Sleep(50 * time.Millisecond)
			next = time.Now()
			continue
		}
		next = next.Add(time.Duration(float64(time.Second) / rate))
		if d := time.Until(next); d > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		} else if d < -time.Second {
			next = time.Now() // fell behind (a slow store): do not catch up in a burst
		}
		s.send(ctx, hc, c, rng)
	}
}

// send sends one request of c: one in five to /browse as one of 200
// visitors, one in five to the checkout, the rest to the items.
func (s *system) send(ctx context.Context, hc *http.Client, c loadClient, rng *rand.Rand) {
	path := "/api/items"
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.srv.URL+path, nil)
	switch rng.IntN(5) {
	case 0:
		req.URL.Path = "/browse"
		req.Header.Set("X-Visitor", fmt.Sprintf("v%d", rng.IntN(200)))
	case 1:
		req.URL.Path = "/api/checkout"
	}
	req.Header.Set("X-Client", c.name)
	if c.apiKey != "" {
		req.Header.Set("X-API-Key", c.apiKey)
	}
	if resp, err := hc.Do(req); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// flushScripts makes Redis forget its scripts, as a restart or a failover
// would; the store loads its script again.
func (s *system) flushScripts() error {
	_, err := redistest.Do(s.redis.Addr, "SCRIPT", "FLUSH")
	return err
}
