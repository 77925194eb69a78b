// Command load reproduces BENCHMARKS.md: it measures sluice and the peer
// rate limiters side by side in one run and prints the tables.
//
//	go run ./cmd/load            # every phase (about 4 minutes); prints the headline and the
//	                             # tables, and writes results/{results.json,tables.md,*.svg}
//	go run ./cmd/load -publish   # also report/{*.svg,results.json} and the generated sections
//	                             # of ../BENCHMARKS.md
//	go run ./cmd/load -rerender  # measure nothing: publish report/results.json again
//
// Phases (-phases, comma-separated, in this order):
//
//   - inprocess: the in-process peers under testing.Benchmark, as in
//     go test -bench InProcess (sequential, parallel over 10k keys, parallel
//     on one hot key);
//   - redis: every Redis peer at each concurrency (-conc) for -duration:
//     checks/s, p50/p99/p99.9, round trips, Redis commands and CPU per check,
//     client CPU per check;
//   - hot: the same on one hot key;
//   - multi: one goroutine, one rule versus -rules rules per check, per peer
//     (peers that cannot decide several rules in one call are stacked);
//   - race: several instances per peer, each on its own client, racing on
//     one key with a limit of 100: admitted versus limit;
//   - lease: one spent key flooded flat out (4 instances × 8 goroutines on
//     a 2,000/s key, one instance × 32 on a 20,000/s key), the Redis store
//     alone, under the lease store, and alone again (the A/A control):
//     checks answered a second, script calls per admitted check, shares;
//   - e2e: a real HTTP server (a child process) without a limiter, behind
//     the sluice middleware on memstore, on Redis and on local leases over
//     Redis (one hot key), and behind the floor
//     (one plain-Lua EVALSHA per request), under an open-loop load at
//     -e2e-rate and a closed-loop load at saturation.
//
// Every figure is reported as a ratio to the peers and to the floor measured
// in the same run, beside A/A controls (two instances of one thing) that
// show the run's own noise.
//
// The tool starts its own redis-server (from PATH) on a free 127.0.0.1 port
// and sends traffic only over loopback. Every run is bounded in time and the
// whole tool by -timeout; it stops by itself.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice/bench"
	"github.com/sluicehq/sluice/bench/internal/redisinfo"
	"github.com/sluicehq/sluice/internal/redistest"
)

var allPhases = []string{"inprocess", "redis", "hot", "multi", "race", "lease", "e2e"}

type config struct {
	phases        []string
	conc          []int
	duration      time.Duration
	warmup        time.Duration
	keys          int
	pool          int
	rules         int
	rounds        int
	multiDuration time.Duration
	leaseDuration time.Duration
	peers         []string
	raceInst      int
	raceG         int
	raceAttempts  int64
	benchtime     string
	e2eRates      []int
	e2eDuration   time.Duration
	e2eConc       int
	e2eWorkers    int
	out           string
	publish       bool
	rerender      bool
	reportDir     string
	benchmarks    string
	timeout       time.Duration
	quiet         bool
	// stdout receives the tables when the run ends (nil: nowhere).
	stdout io.Writer
}

func main() {
	if os.Getenv(roleEnv) == "server" {
		serverMain()
		return
	}
	cfg, err := parseFlags(flag.CommandLine, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(2)
	}
	cfg.stdout = os.Stdout
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func parseFlags(fs *flag.FlagSet, args []string) (config, error) {
	var cfg config
	phases := fs.String("phases", strings.Join(allPhases, ","), "phases to run: "+strings.Join(allPhases, ","))
	conc := fs.String("conc", "1,16,64", "goroutines per Redis run")
	peers := fs.String("peers", "", "Redis and in-process peers to run, comma-separated (default: all)")
	fs.DurationVar(&cfg.duration, "duration", 3*time.Second, "measured time of each Redis run")
	fs.DurationVar(&cfg.warmup, "warmup", 500*time.Millisecond, "unrecorded warm-up before each run")
	fs.IntVar(&cfg.keys, "keys", 10_000, "key space")
	fs.IntVar(&cfg.pool, "pool", 128, "go-redis PoolSize of every client")
	fs.IntVar(&cfg.rules, "rules", 4, "rules per check in the multi phase")
	fs.IntVar(&cfg.rounds, "rounds", 5, "slices each Redis or HTTP measurement is split into, interleaved with the others'")
	fs.DurationVar(&cfg.multiDuration, "multi-duration", 2*time.Second, "measured time of each multi-rule run")
	fs.DurationVar(&cfg.leaseDuration, "lease-duration", time.Second, "measured time of each lease-phase flood, per round")
	fs.IntVar(&cfg.raceInst, "race-instances", 4, "instances (each with its own client) in the race")
	fs.IntVar(&cfg.raceG, "race-goroutines", 8, "goroutines per instance in the race")
	fs.Int64Var(&cfg.raceAttempts, "race-attempts", 1000, "checks in each race (limit is 100)")
	fs.StringVar(&cfg.benchtime, "benchtime", "500ms", "testing.B time (or Nx count) per in-process benchmark and round")
	e2eRates := fs.String("e2e-rate", "2000,10000", "open-loop HTTP request rates, per second")
	fs.DurationVar(&cfg.e2eDuration, "e2e-duration", 3*time.Second, "measured time of each HTTP run")
	fs.IntVar(&cfg.e2eConc, "e2e-conc", 32, "clients in the closed-loop HTTP run")
	fs.IntVar(&cfg.e2eWorkers, "e2e-workers", 64, "connections, each with its own sender, in the open-loop HTTP run")
	fs.StringVar(&cfg.out, "out", "results", "directory for results.json and tables.md")
	fs.BoolVar(&cfg.publish, "publish", false, "also write the charts and results.json to -report, and the tables and headline into -benchmarks")
	fs.BoolVar(&cfg.rerender, "rerender", false, "measure nothing: rewrite the charts, tables and headline of -publish from -report's results.json")
	fs.StringVar(&cfg.reportDir, "report", "report", "directory of the published charts and results.json (committed)")
	fs.StringVar(&cfg.benchmarks, "benchmarks", "../BENCHMARKS.md", "file whose generated sections (tables, headline) -publish rewrites")
	fs.DurationVar(&cfg.timeout, "timeout", 20*time.Minute, "stop everything after this long")
	fs.BoolVar(&cfg.quiet, "q", false, "no progress on stderr")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	for _, p := range splitList(*phases) {
		if !slices.Contains(allPhases, p) {
			return cfg, fmt.Errorf("unknown phase %q (known: %s)", p, strings.Join(allPhases, ","))
		}
		cfg.phases = append(cfg.phases, p)
	}
	var err error
	if cfg.conc, err = intList("-conc", *conc); err != nil {
		return cfg, err
	}
	if cfg.e2eRates, err = intList("-e2e-rate", *e2eRates); err != nil {
		return cfg, err
	}
	cfg.peers = splitList(*peers)
	switch {
	case cfg.keys < 1 || cfg.pool < 1 || cfg.rules < 1 || cfg.rounds < 1 || cfg.raceInst < 1 || cfg.raceG < 1:
		return cfg, fmt.Errorf("-keys, -pool, -rules, -rounds, -race-instances and -race-goroutines must be positive")
	case cfg.e2eConc < 1 || cfg.e2eWorkers < 1:
		return cfg, fmt.Errorf("-e2e-conc and -e2e-workers must be positive")
	case cfg.duration <= 0 || cfg.multiDuration <= 0 || cfg.e2eDuration <= 0 || cfg.leaseDuration <= 0:
		return cfg, fmt.Errorf("durations must be positive")
	}
	cfg.publish = cfg.publish || cfg.rerender
	return cfg, nil
}

func intList(name, s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: bad value %q", name, f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no value", name)
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

var quiet bool

func logf(format string, args ...any) {
	if !quiet {
		fmt.Fprintf(os.Stderr, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
}

func (c config) has(phase string) bool { return slices.Contains(c.phases, phase) }

func (c config) wants(peer string) bool { return len(c.peers) == 0 || slices.Contains(c.peers, peer) }

func run(ctx context.Context, cfg config) error {
	quiet = cfg.quiet
	if cfg.publish {
		// Found now, not after minutes of measuring, nor half published.
		if err := checkPublishTargets(cfg); err != nil {
			return err
		}
	}
	if cfg.rerender {
		return rerender(cfg)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	t0 := time.Now()
	res := &Results{
		Machine: machineInfo(),
		Command: commandLine(os.Args[1:]),
		Settings: Settings{
			Phases: cfg.phases, Concurrency: cfg.conc, Duration: cfg.duration, Warmup: cfg.warmup,
			Keys: cfg.keys, PoolSize: cfg.pool, Rules: cfg.rules, Rounds: cfg.rounds, MultiDuration: cfg.multiDuration,
			BenchTime: cfg.benchtime, E2ERates: cfg.e2eRates, E2EDuration: cfg.e2eDuration,
			E2EConc: cfg.e2eConc, E2EWorkers: cfg.e2eWorkers, Limit: bench.HighLimit(nil), LeaseDuration: cfg.leaseDuration,
		},
		Peers:    map[string]string{},
		Versions: moduleVersions(),
	}
	res.Versions["github.com/sluicehq/sluice"] = gitRev("..")
	problem := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		logf("PROBLEM: %s", msg)
		res.Problems = append(res.Problems, msg)
	}

	if cfg.has("inprocess") {
		res.InProcess = runInProcess(ctx, cfg, res, problem)
	}

	needRedis := cfg.has("redis") || cfg.has("hot") || cfg.has("multi") || cfg.has("race") || cfg.has("lease") || cfg.has("e2e")
	if needRedis && ctx.Err() == nil {
		srv, err := redistest.Launch(redistest.Options{Log: true})
		if err != nil {
			return err
		}
		defer srv.Stop()
		logf("redis-server pid %d on %s", srv.Pid(), srv.Addr)
		if err := runRedisPhases(ctx, cfg, srv.Addr, res, problem); err != nil {
			problem("%v", err)
		}
		if sum := versusSummary(res); sum != "" {
			logf("sluice against ulule:\n%s", sum)
		}
	}

	res.Machine.LoadAfter = loadavg()
	res.Elapsed = time.Since(t0)
	logf("done in %v", res.Elapsed.Round(time.Second))
	if ctx.Err() != nil {
		problem("stopped early: %v", ctx.Err())
	}
	return writeOutputs(cfg, res)
}

// runInProcess runs every in-process benchmark cfg.rounds times, peers
// interleaved (round after round over all of them), and keeps each one's
// median ns/op: a burst of background load then spoils one sample of every
// peer rather than every sample of one.
func runInProcess(ctx context.Context, cfg config, res *Results, problem func(string, ...any)) []InProcessResult {
	testing.Init() // registers -test.benchtime, which testing.Benchmark reads; after our flags, so -h stays short
	if err := flag.Set("test.benchtime", cfg.benchtime); err != nil {
		problem("-benchtime: %v", err)
	}
	type key struct{ peer, mode string }
	samples := map[key][]InProcessResult{}
	var order []key
	for round := range cfg.rounds {
		for _, p := range bench.InProcessPeers() {
			if !cfg.wants(p.Name) {
				continue
			}
			res.Peers["inprocess/"+p.Name] = p.Algorithm
			for _, m := range bench.InProcessModes {
				if ctx.Err() != nil {
					break
				}
				r := testing.Benchmark(m.Bench(p))
				if r.N == 0 {
					problem("in-process %s/%s: benchmark failed", p.Name, m.Name)
					continue
				}
				ir := InProcessResult{Peer: p.Name, Mode: m.Name, N: r.N,
					NsPerOp: float64(r.T.Nanoseconds()) / float64(r.N), AllocsPerOp: r.AllocsPerOp(),
					BytesPerOp: r.AllocedBytesPerOp(), DeniedPerOp: r.Extra["denied/op"], ErrorsPerOp: r.Extra["errors/op"]}
				logf("in-process round %d %-12s %-18s %8.1f ns/op %d allocs/op", round+1, p.Name, m.Name, ir.NsPerOp, ir.AllocsPerOp)
				k := key{p.Name, m.Name}
				if _, ok := samples[k]; !ok {
					order = append(order, k)
				}
				samples[k] = append(samples[k], ir)
			}
		}
	}
	var out []InProcessResult
	for _, k := range order {
		ss := samples[k]
		slices.SortFunc(ss, func(a, b InProcessResult) int { return cmp.Compare(a.NsPerOp, b.NsPerOp) })
		med := ss[len(ss)/2]
		for _, s := range ss {
			med.Samples = append(med.Samples, s.NsPerOp)
		}
		out = append(out, med)
	}
	return out
}

func runRedisPhases(ctx context.Context, cfg config, addr string, res *Results, problem func(string, ...any)) error {
	admin := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 2})
	defer admin.Close()
	info, err := admin.Info(ctx, "server").Result()
	if err != nil {
		return fmt.Errorf("redis INFO: %w", err)
	}
	res.Machine.RedisVersion = redisinfo.ParseInfo(info)["redis_version"]
	env := &bench.Env{Addr: addr, PoolSize: cfg.pool}
	defer env.Close()
	keys := bench.Keys(cfg.keys)
	var peers []bench.RedisPeer
	for _, p := range bench.RedisPeers() {
		if cfg.wants(p.Name) {
			peers = append(peers, p)
			res.Peers[p.Name] = p.Algorithm
		}
	}

	if cfg.has("redis") {
		res.Redis = runRedisPhase(ctx, cfg, "redis", peers, keys, admin, env, problem)
	}
	if cfg.has("hot") {
		res.RedisHot = runRedisPhase(ctx, cfg, "hot", peers, keys[:1], admin, env, problem)
	}

	if cfg.has("multi") {
		// Per peer, one rule and several rules interleaved.
		for _, p := range peers {
			if p.Baseline || ctx.Err() != nil {
				continue
			}
			one, many := bench.HighLimit(keys), bench.HighLimit(keys)
			many.Rules = cfg.rules
			for _, r := range measureInterleaved(ctx, []bench.RedisPeer{p, p}, []bench.Spec{one, many}, 1, cfg.rounds,
				cfg.warmup, cfg.multiDuration, admin, env, problem) {
				logRun("multi", r)
				res.MultiRule = append(res.MultiRule, r)
			}
		}
	}

	if cfg.has("race") {
		for _, p := range peers {
			if p.Baseline || ctx.Err() != nil {
				continue
			}
			key := "race:" + p.Name + ":" + strconv.FormatInt(time.Now().UnixNano(), 36)
			r, err := bench.Race(ctx, p, env, key, cfg.raceInst, cfg.raceG, cfg.raceAttempts, 30*time.Second)
			if err != nil {
				problem("race %s: %v", p.Name, err)
				continue
			}
			logf("race %-15s admitted %d of limit %d (%d attempts, %d errors)", p.Name, r.Admitted, r.Limit, r.Attempts, r.Errors)
			res.Race = append(res.Race, RaceRow{Peer: p.Name, RaceResult: r})
		}
	}

	if cfg.has("lease") && ctx.Err() == nil {
		res.Leases = runLeasePhase(ctx, cfg, addr, admin, problem)
	}

	if cfg.has("e2e") && ctx.Err() == nil {
		runs, err := runE2E(ctx, cfg, addr)
		res.E2E = runs
		for _, r := range runs {
			logf("e2e %-8s %-6s %8.0f req/s p50 %v p99 %v (%d errors, %d non-200)", r.Server, r.Mode, r.PerSec,
				r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.Errors, r.Non200)
			if r.Errors > 0 || r.Non200 > 0 || r.StoreFailures > 0 {
				problem("%s", e2eProblem(r))
			}
		}
		if err != nil {
			problem("e2e: %v", err)
		}
	}
	return nil
}

// runRedisPhase measures every peer of peers on keys at each concurrency.
// Concurrency is outermost; within a level every peer runs a slice in
// turn, cfg.rounds times, so background load drifts over all alike.
func runRedisPhase(ctx context.Context, cfg config, phase string, peers []bench.RedisPeer, keys []string,
	admin *redis.Client, env *bench.Env, problem func(string, ...any)) []RedisRun {
	var out []RedisRun
	for _, c := range cfg.conc {
		if ctx.Err() != nil {
			break
		}
		specs := make([]bench.Spec, len(peers))
		for i := range specs {
			specs[i] = bench.HighLimit(keys)
		}
		logf("%s: %d peers at %d goroutines on %d keys, %d rounds", phase, len(peers), c, len(keys), cfg.rounds)
		for _, r := range measureInterleaved(ctx, peers, specs, c, cfg.rounds, cfg.warmup, cfg.duration, admin, env, problem) {
			logRun(phase, r)
			if r.Errors > 0 || r.Denied > 0 {
				problem("%s %s at %d: %d denied, %d errors (first: %s)", phase, r.Peer, c, r.Denied, r.Errors, r.FirstError)
			}
			out = append(out, r)
		}
	}
	return out
}

// e2eProblem describes what went wrong in an HTTP run: errors, answers
// other than 200, and requests the store did not decide within the
// middleware's budget (let through by on_fail: open).
func e2eProblem(r E2ERun) string {
	load := fmt.Sprintf("open loop at %d req/s", r.Rate)
	if r.Mode == "closed" {
		load = "closed loop"
	}
	var what []string
	if r.Errors > 0 || r.Non200 > 0 {
		what = append(what, fmt.Sprintf("%d errors and %d answers other than 200 (first: %s)", r.Errors, r.Non200, r.FirstError))
	}
	if r.StoreFailures > 0 {
		what = append(what, fmt.Sprintf("%d requests the store did not decide within the budget", r.StoreFailures))
	}
	return fmt.Sprintf("e2e %s, %s: %s", r.Server, load, strings.Join(what, "; "))
}

func logRun(phase string, r RedisRun) {
	logf("%s %-15s rules %d conc %3d: %8.0f checks/s p50 %v p99 %v p99.9 %v trips %.2f cmds %.2f redis %.1f µs client %.1f µs",
		phase, r.Peer, r.Rules, r.Concurrency, r.PerSec, r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond),
		r.P999.Round(time.Microsecond), r.RoundTrips, r.RedisCmds, r.RedisCPU, r.ClientCPU)
}

func machineInfo() Machine {
	m := Machine{
		Date:       time.Now().UTC().Format(time.RFC3339),
		NumCPU:     runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion:  runtime.Version(),
		LoadBefore: loadavg(),
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				m.MemGiB = float64(int(kb/1024/1024*10+0.5)) / 10
			}
		}
	}
	return m
}

// commandLine renders the tool's invocation for the report, quoting the
// arguments a shell would split.
func commandLine(args []string) string {
	parts := []string{"go run ./cmd/load"}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'$()*?[]{}|&;<>`\\") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// relPath returns target relative to base, both taken from the working
// directory when relative.
func relPath(base, target string) (string, error) {
	b, err := filepath.Abs(base)
	if err != nil {
		return "", err
	}
	t, err := filepath.Abs(target)
	if err != nil {
		return "", err
	}
	return filepath.Rel(b, t)
}

// gitRev describes the checkout at dir: the commit, "-dirty" when files
// outside bench/ differ from it.
func gitRev(dir string) string {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	rev := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--", ".", ":!bench").Output(); err == nil && len(st) > 0 {
		rev += "-dirty"
	}
	return rev
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// rerender publishes -report's results.json again, measuring nothing: the
// figures stay those of the run that wrote it.
func rerender(cfg config) error {
	b, err := os.ReadFile(filepath.Join(cfg.reportDir, "results.json"))
	if err != nil {
		return fmt.Errorf("-rerender: %w", err)
	}
	var res Results
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("-rerender: %s: %w", filepath.Join(cfg.reportDir, "results.json"), err)
	}
	return writeOutputs(cfg, &res)
}

// checkPublishTargets reports a file -publish would rewrite that does not
// exist or lacks its markers.
func checkPublishTargets(cfg config) error {
	for _, f := range []struct {
		path       string
		begin, end string
	}{
		{cfg.benchmarks, beginMarker, endMarker},
		{cfg.benchmarks, headlineBegin, headlineEnd},
	} {
		text, err := os.ReadFile(f.path)
		if err != nil {
			return fmt.Errorf("-publish: %w (run the tool in bench/, or set -benchmarks)", err)
		}
		if _, _, ok := findSection(string(text), f.begin, f.end); !ok {
			return fmt.Errorf("-publish: %s has no section between %q and %q", f.path, f.begin, f.end)
		}
	}
	return nil
}

// writeOutputs writes results.json and tables.md to -out, and with -publish
// the charts, results.json and the tables to -report and -benchmarks.
func writeOutputs(cfg config, res *Results) error {
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(cfg.out, "results.json"), res); err != nil {
		return err
	}
	charts := writeCharts(res)
	for name, svg := range charts {
		if err := os.WriteFile(filepath.Join(cfg.out, name), svg, 0o644); err != nil {
			return err
		}
	}
	tables := renderMarkdown(res, ".", charts)
	if err := os.WriteFile(filepath.Join(cfg.out, "tables.md"), []byte(tables), 0o644); err != nil {
		return err
	}
	logf("wrote %s", filepath.Join(cfg.out, "{results.json,tables.md,*.svg}"))
	if cfg.stdout != nil {
		if _, err := io.WriteString(cfg.stdout, renderHeadline(res)+"\n"+tables); err != nil {
			return err
		}
	}
	if !cfg.publish {
		return nil
	}
	if err := os.MkdirAll(cfg.reportDir, 0o755); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(cfg.reportDir, "results.json"), res); err != nil {
		return err
	}
	for name, svg := range charts {
		if err := os.WriteFile(filepath.Join(cfg.reportDir, name), svg, 0o644); err != nil {
			return err
		}
	}
	rel, err := relPath(filepath.Dir(cfg.benchmarks), cfg.reportDir)
	if err != nil {
		return err
	}
	if err := spliceGenerated(cfg.benchmarks, beginMarker, endMarker, renderMarkdown(res, filepath.ToSlash(rel), charts)); err != nil {
		return err
	}
	if err := spliceGenerated(cfg.benchmarks, headlineBegin, headlineEnd, renderHeadline(res)); err != nil {
		return err
	}
	logf("published %s, and the tables and headline in %s", cfg.reportDir, cfg.benchmarks)
	return nil
}
