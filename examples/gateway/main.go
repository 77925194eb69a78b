// Command gateway is sluice's demo: a small JSON API behind several rate
// limit rules, on the in-memory store or on Redis.
//
//	go run ./examples/gateway                         # in-memory store, :8080
//	export SLUICE_SECRET=$(openssl rand -hex 32)      # the same on every instance
//	go run ./examples/gateway -redis 127.0.0.1:6379   # Redis store
//	go run ./examples/gateway -redis 10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000   # Redis Cluster
//	go run ./examples/gateway -redis 10.0.0.1:26379,10.0.0.2:26379 -sentinel-master mymaster
//	go run ./examples/gateway -rules examples/gateway/rules.yaml
//	go run ./examples/gateway -admin 127.0.0.1:9090   # operator API, off by default
//	go run ./examples/gateway -redis 127.0.0.1:6379 -lease 4  # local leases, 4 instances
//
// Then, from another terminal:
//
//	for i in $(seq 60); do curl -s -o /dev/null -w '%{http_code} ' localhost:8080/; done; echo
//	curl -i localhost:8080/
//	curl -s localhost:8080/metrics | grep ^sluice_
//	curl -s localhost:8080/readyz                   # the store's health: 503 while it cannot decide
//
// The rules (see rules.go): 50 requests a minute per client IP on every
// route, 20 a minute per API key (X-API-Key), 10 a minute per user and
// endpoint for signed-in users (X-User stands in for real authentication),
// and 5,000 a minute for the whole gateway.
//
// With -rules the rules come from a YAML or JSON file instead, such as
// rules.yaml next to this file, which adds plans (X-Plan: pro), a daily
// quota per tenant (X-Tenant) counted in Berlin's calendar days with an
// override, a shadow rule and a bypass entry. The file is read again every 5 seconds and on
// SIGHUP; a file with a mistake is refused and logged, and the last good
// rules stay.
//
// On Redis, identities (client addresses, API keys, users) are stored as a
// keyed hash, so the gateway refuses to start without a secret (-secret or
// $SLUICE_SECRET) rather than hash them with the store's public default key.
//
// SIGTERM or Ctrl-C shuts the gateway down gracefully: it stops accepting
// connections, lets requests in flight finish, then closes the store. The
// server bounds how long a client may take to send its headers and its
// request, how long an idle connection stays open, and the size of the
// headers (see server.go).
//
// With -admin the operator API (package rules/admin) listens on an address
// of its own: why is this client limited, and unblock it now.
//
//	curl -s -d '{"rule":"per-ip","identity":"127.0.0.1"}' localhost:9090/inspect
//	curl -s -d '{"rule":"per-ip","identity":"127.0.0.1"}' localhost:9090/reset
//
// With -lease N the store is wrapped in a lease store (store/lease) for N
// instances: every token-bucket and fixed-window rule is served from local
// leases, and the rule file's lease and hot_keys blocks tune each rule.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/rules"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
	_ "time/tzdata" // the calendar limit's zone in rules.yaml, on any machine

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/metrics"
	"github.com/sluicehq/sluice/rules/rulefile"
	"github.com/sluicehq/sluice/store/lease"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/redisstore"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", ":8080", "listen address")
	redisAddr := flag.String("redis", "", "Redis: host:port, a comma-separated list of cluster nodes or sentinels, or a redis:// URL (addr= for more cluster nodes, master_name= for Sentinel); empty uses the in-memory store")
	cluster := flag.Bool("cluster", false, "the -redis address is a Redis Cluster seed (implied by several addresses)")
	sentinelMaster := flag.String("sentinel-master", "", "the -redis addresses are sentinels monitoring the primary of this name")
	secret := flag.String("secret", os.Getenv("SLUICE_SECRET"), "secret for hashing identities into Redis keys (default $SLUICE_SECRET)")
	mode := flag.String("headers", "ietf", "rate-limit header modes: ietf, draft06, x-ratelimit, none, or a comma-separated combination")
	budget := flag.Duration("budget", decide.DefaultBudget, "latency budget of each store call")
	adminAddr := flag.String("admin", "", "listen address of the operator API (inspect and reset buckets; no authentication, keep it private); empty: off")
	rulesFile := flag.String("rules", "", "rule file (YAML, or JSON if named *.json) to load and watch; empty uses the built-in rules")
	leaseInstances := flag.Int("lease", 0, "serve rules from local leases, sized for this many instances; 0 leases nothing")
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	hdr, err := headers.ParseMode(*mode)
	if err != nil {
		return err
	}
	collector, err := metrics.New(metrics.Config{})
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector)
	target := redisTarget{spec: *redisAddr, cluster: *cluster, master: *sentinelMaster}
	store, closeStore, err := openStore(target, *secret, *budget, log, collector)
	if err != nil {
		return err
	}
	defer func() {
		closeStore()
		log.Info("gateway stopped; store closed")
	}()
	ready := readiness(store, log)
	if *leaseInstances > 0 {
		leased, closeLease, err := withLeases(store, *leaseInstances, log, reg)
		if err != nil {
			return err
		}
		defer closeLease()
		store = leased
	}

	src := rulesSource(goRules)
	var watcher *rulefile.Watcher
	if *rulesFile != "" {
		src = fileRules(*rulesFile, log, &watcher)
	}
	var limited rules.Source
	router, err := newRouterWith(store, log, capture(src, &limited), decide.WithHeaders(hdr), decide.WithBudget(*budget), decide.WithObserver(collector))
	if watcher != nil {
		defer watcher.Close()
		go reloadOnHangup(watcher)
	}
	if err != nil {
		return err
	}
	// /metrics and /readyz are served beside the API, not behind its limiter.
	top := http.NewServeMux()
	top.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	top.Handle("GET /readyz", ready)
	top.Handle("/", router)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, stopAdmin, err := serveAdmin(ctx, *adminAddr, store, limited, log, collector)
	if err != nil {
		return err
	}
	// Deferred after the store's close, so it runs before it: the
	// operator API finishes its requests before the store closes.
	defer stopAdmin()
	backend := "memory"
	if *redisAddr != "" {
		backend = "redis " + target.kind() + " " + *redisAddr
	}
	log.Info("gateway listening", "addr", ln.Addr().String(), "store", backend, "headers", hdr.String(), "rules", cmp.Or(*rulesFile, "built in"))
	return serve(ctx, newHTTPServer(top, log), ln, log)
}

// reloadOnHangup reloads the rule file on every SIGHUP, for operators who
// push a new file and want it applied at once. (Errors are logged by the
// watcher.)
func reloadOnHangup(w *rulefile.Watcher) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	for range hup {
		_ = w.Reload()
	}
}

// errNoSecret refuses a Redis store without a secret: the identities in its
// keys would be hashed with a public key, which anyone holding a dump of
// the keys could test guesses against.
var errNoSecret = errors.New("-redis needs a secret to hash identities into Redis keys: " +
	"set SLUICE_SECRET (or -secret) to the same random value on every instance, " +
	"such as the output of `openssl rand -hex 32`")

// openStore returns the in-memory store, or a Redis store with a client
// configured as a limiter needs.
func openStore(target redisTarget, secret string, budget time.Duration, log *slog.Logger, events *metrics.Collector) (sluice.Store, func(), error) {
	// A nil collector is no events: a typed nil in the configs' interfaces
	// would be called.
	var memEvents memstore.Events
	var redisEvents sluice.StoreEvents
	if events != nil {
		memEvents, redisEvents = events, events
	}
	if target.spec == "" {
		s := memstore.New(memstore.Config{Events: memEvents})
		return s, func() { s.Close(context.Background()) }, nil
	}
	if secret == "" {
		return nil, nil, errNoSecret
	}
	client, err := newRedisClient(target, budget)
	if err != nil {
		return nil, nil, err
	}
	s, err := redisstore.New(client, redisstore.Config{Secret: []byte(secret), Logger: log, Events: redisEvents, Coalesce: 64})
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return s, func() { s.Close(context.Background()); client.Close() }, nil
}

// readiness returns the readiness probe of store: a Redis store's health
// (200 once it can decide, 503 while it cannot), after waiting up to 5 s
// for it to be ready, so that the first requests are decided by Redis; an
// in-process store is always ready.
func readiness(store sluice.Store, log *slog.Logger) http.Handler {
	rs, ok := store.(*redisstore.Store)
	if !ok {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"ready":true}`+"\n")
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rs.Ready(ctx); err != nil {
		log.Warn("gateway: the Redis store is not ready; requests fall to their rules' on_fail until it is", "err", err)
	}
	return rs.HealthHandler()
}

// withLeases wraps store in a lease store for instances instances: rules
// without a lease block of their own are leased by default. Its metrics
// go to reg; the returned func gives every unused token back.
func withLeases(store sluice.Store, instances int, log *slog.Logger, reg *prometheus.Registry) (sluice.Store, func(), error) {
	collector, err := metrics.NewLease(metrics.LeaseConfig{Registerer: reg})
	if err != nil {
		return nil, nil, err
	}
	s, err := lease.New(store, lease.Config{
		Instances: instances,
		Default:   &sluice.LeasePolicy{Enabled: true},
		Observer:  collector,
		Logger:    log,
	})
	if err != nil {
		return nil, nil, err
	}
	return s, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			log.Warn("lease tokens not given back", "err", err)
		}
	}, nil
}
