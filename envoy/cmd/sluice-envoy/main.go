// Command sluice-envoy is an Envoy rate limit service
// (envoy.service.ratelimit.v3.RateLimitService) over sluice: Envoy, Istio
// or any Envoy-based gateway asks it whether a request may pass, and it
// decides all of the request's descriptors in one store call, all or
// nothing, with sluice's algorithms, on Redis (single node, Cluster or
// Sentinel) or in memory.
//
//	go run ./cmd/sluice-envoy -config ratelimit.yaml                            # in memory
//	export SLUICE_SECRET=$(openssl rand -hex 32)                                # the same on every instance
//	go run ./cmd/sluice-envoy -config ratelimit.yaml -redis 127.0.0.1:6379
//	go run ./cmd/sluice-envoy -config ratelimit.yaml -redis 10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000   # Redis Cluster
//	go run ./cmd/sluice-envoy -config ratelimit.yaml -check                     # check the mapping and exit
//
// The mapping files are envoyproxy/ratelimit's configuration files, read
// as they are, with a few fields of sluice's own (see the envoy package).
// A file with a mistake is refused at start, naming the file, the line and
// the field. SIGHUP loads the files again: a change with a mistake is
// refused and logged, and the last good mapping stays.
//
// Two of envoyproxy/ratelimit's settings are read from the environment as
// it reads them, each also a flag: MERGE_DOMAIN_CONFIG=true
// (-merge-domains) lets several files define one domain together, and
// RESPONSE_DYNAMIC_METADATA=true (-dynamic-metadata) returns dynamic
// metadata with every response (see the envoy package).
//
// It serves gRPC on -grpc (the rate limit service, grpc.health.v1, and with
// -reflection server reflection) and
// HTTP on -http: /healthz (alive), /readyz (the store can decide) and
// /metrics (Prometheus). SIGTERM or Ctrl-C stops it gracefully.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/sluicehq/sluice/decide"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/envoy"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/metrics"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/redisstore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "sluice-envoy:", err)
		os.Exit(1)
	}
}

// listening reports the addresses a started service listens on.
type listening func(grpcAddr, httpAddr string)

// flags are the command's flags.
type flags struct {
	configs                 []string
	grpcAddr, httpAddr      string
	redisAddr, secret, mode string
	budget                  time.Duration
	check, reflect          bool
	merge, metadata         bool         // -merge-domains, -dynamic-metadata
	headers                 headers.Mode // -headers, parsed after -check
}

// mappingOptions returns the options the mapping files are read with.
func (f *flags) mappingOptions() []envoy.MappingOption {
	if f.merge {
		return []envoy.MappingOption{envoy.MergeDomains()}
	}
	return nil
}

// envBool reads a boolean that envoyproxy/ratelimit reads from the
// environment, as it does (strconv.ParseBool); unset or empty is false.
func envBool(name string) (bool, error) {
	s := os.Getenv(name)
	if s == "" {
		return false, nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("$%s: %q is not true or false", name, s)
	}
	return v, nil
}

// parseFlags parses the command's arguments.
func parseFlags(args []string, stderr io.Writer) (*flags, error) {
	var f flags
	merge, err := envBool("MERGE_DOMAIN_CONFIG")
	if err != nil {
		return nil, err
	}
	metadata, err := envBool("RESPONSE_DYNAMIC_METADATA")
	if err != nil {
		return nil, err
	}
	fs := flag.NewFlagSet("sluice-envoy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Func("config", "mapping file (envoyproxy/ratelimit's YAML format); repeat for several domains' files", func(s string) error {
		f.configs = append(f.configs, s)
		return nil
	})
	fs.StringVar(&f.grpcAddr, "grpc", ":8081", "gRPC listen address (rate limit service, grpc.health.v1)")
	fs.StringVar(&f.httpAddr, "http", ":8080", "HTTP listen address (/healthz, /readyz, /metrics)")
	fs.StringVar(&f.redisAddr, "redis", "", "Redis: host:port, a comma-separated list of Redis Cluster nodes, or a redis:// URL (master_name= for Sentinel); empty uses the in-memory store")
	fs.StringVar(&f.secret, "secret", os.Getenv("SLUICE_SECRET"), "secret for hashing descriptors into Redis keys, the same on every instance (default $SLUICE_SECRET)")
	fs.StringVar(&f.mode, "headers", "ietf", "rate-limit header modes: ietf, draft06, x-ratelimit, none, or a comma-separated combination")
	fs.DurationVar(&f.budget, "budget", decide.DefaultBudget, "latency budget of each store call")
	fs.BoolVar(&f.check, "check", false, "check the mapping files and exit")
	fs.BoolVar(&f.reflect, "reflection", false, "serve gRPC server reflection too, for grpcurl and the like")
	fs.BoolVar(&f.merge, "merge-domains", merge, "let several mapping documents define one domain together, adding their top-level descriptors (default $MERGE_DOMAIN_CONFIG, as envoyproxy/ratelimit)")
	fs.BoolVar(&f.metadata, "dynamic-metadata", metadata, "return dynamic metadata with every response: the domain, the descriptors, and the metadata of the limits that passed (default $RESPONSE_DYNAMIC_METADATA, as envoyproxy/ratelimit)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if len(f.configs) == 0 {
		return nil, errors.New("-config: at least one mapping file is needed")
	}
	return &f, nil
}

// run is the command: it returns when ctx is done, or at once with -check.
func run(ctx context.Context, args []string, stderr io.Writer, started listening) error {
	f, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	mapping, err := envoy.LoadMapping(f.configs, f.mappingOptions()...)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if f.check {
		log.Info("mapping files are valid", "files", strings.Join(f.configs, ","), "domains", strings.Join(mapping.Domains(), ","))
		return nil
	}
	if f.headers, err = headers.ParseMode(f.mode); err != nil {
		return fmt.Errorf("-headers: %w", err)
	}
	reg := prometheus.NewRegistry()
	collector, err := metrics.New(metrics.Config{Registerer: reg})
	if err != nil {
		return err
	}
	store, closeStore, err := openStore(f.redisAddr, f.secret, log, collector)
	if err != nil {
		return err
	}
	defer closeStore()
	opts := []envoy.Option{decide.WithHeaders(f.headers), decide.WithBudget(f.budget),
		decide.WithObserver(collector), decide.WithLogger(log), envoy.WithRegisterer(reg)}
	if f.metadata {
		opts = append(opts, envoy.WithDynamicMetadata())
	}
	svc, err := envoy.New(store, mapping, opts...)
	if err != nil {
		return err
	}
	return serve(ctx, f, svc, reg, log, started)
}

// serve serves svc on f's addresses until ctx is done or a server fails,
// then stops gracefully.
func serve(ctx context.Context, f *flags, svc *envoy.Service, reg *prometheus.Registry, log *slog.Logger, started listening) error {
	gln, err := net.Listen("tcp", f.grpcAddr)
	if err != nil {
		return err
	}
	hln, err := net.Listen("tcp", f.httpAddr)
	if err != nil {
		gln.Close()
		return err
	}
	gs := grpc.NewServer()
	svc.Register(gs)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	if f.reflect {
		reflection.Register(gs)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.Handle("GET /readyz", svc.HealthHandler())
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	web := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go followReadiness(ctx, svc, hs)
	go reloadOnHangup(ctx, svc, f, log)
	errs := make(chan error, 2)
	go func() { errs <- gs.Serve(gln) }()
	go func() {
		if err := web.Serve(hln); !errors.Is(err, http.ErrServerClosed) {
			errs <- err
		}
	}()
	backend := "memory"
	if f.redisAddr != "" {
		backend = "redis " + f.redisAddr
	}
	log.Info("sluice-envoy listening", "grpc", gln.Addr().String(), "http", hln.Addr().String(),
		"store", backend, "domains", strings.Join(svc.Mapping().Domains(), ","), "headers", f.headers.String())
	if started != nil {
		started(gln.Addr().String(), hln.Addr().String())
	}
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	shutdown(gs, hs, web)
	log.Info("sluice-envoy stopped")
	return err
}

// shutdown stops the servers: gRPC gracefully within 10 s, HTTP within 5 s.
func shutdown(gs *grpc.Server, hs *health.Server, web *http.Server) {
	hs.Shutdown()
	stopped := make(chan struct{})
	go func() { gs.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		gs.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = web.Shutdown(ctx)
}

// errNoSecret refuses a Redis store without a secret: descriptor values
// (client addresses, user ids) would be hashed into keys with a public key.
var errNoSecret = errors.New("-redis needs a secret to hash descriptors into Redis keys: " +
	"set SLUICE_SECRET (or -secret) to the same random value on every instance, such as the output of `openssl rand -hex 32`")

// openStore returns the in-memory store, or the Redis store at addr.
func openStore(addr, secret string, log *slog.Logger, events *metrics.Collector) (sluice.Store, func(), error) {
	if addr == "" {
		s := memstore.New(memstore.Config{Events: events})
		return s, func() { _ = s.Close(context.Background()) }, nil
	}
	if secret == "" {
		return nil, nil, errNoSecret
	}
	addrs := []string{addr}
	if !strings.Contains(addr, "://") {
		addrs = strings.Split(addr, ",")
	}
	client, err := redisstore.NewClient(addrs...)
	if err != nil {
		return nil, nil, fmt.Errorf("-redis: %w", err)
	}
	s, err := redisstore.New(client, redisstore.Config{Secret: []byte(secret), Logger: log, Events: events})
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return s, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
		client.Close()
	}, nil
}

// followReadiness keeps the gRPC health status in step with the service's
// readiness, checked every 2 s.
func followReadiness(ctx context.Context, svc *envoy.Service, hs *health.Server) {
	set := func() {
		c, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		st := healthpb.HealthCheckResponse_SERVING
		if svc.Ready(c) != nil {
			st = healthpb.HealthCheckResponse_NOT_SERVING
		}
		hs.SetServingStatus("", st)
		hs.SetServingStatus("envoy.service.ratelimit.v3.RateLimitService", st)
	}
	set()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			set()
		}
	}
}

// reloadOnHangup loads the mapping files again on every SIGHUP, keeping the
// last good mapping when they have a mistake.
func reloadOnHangup(ctx context.Context, svc *envoy.Service, f *flags, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			m, err := envoy.LoadMapping(f.configs, f.mappingOptions()...)
			if err != nil {
				log.Error("mapping refused; keeping the last good one", "error", err.Error())
				continue
			}
			_ = svc.SetMapping(m)
			log.Info("mapping reloaded", "domains", strings.Join(m.Domains(), ","))
		}
	}
}
