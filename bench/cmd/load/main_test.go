package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/redistest/redisstoretest"
)

// TestMain lets the end-to-end phase re-execute the test binary as its
// HTTP server, as it re-executes the load binary in normal use; and says,
// in one line, when the tests that need redis-server were skipped.
func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "server" {
		serverMain()
		os.Exit(0)
	}
	os.Exit(redisstoretest.Quiet(redistest.ReportSkips(m)).Run())
}

// needRedis skips t without redis-server (fails it under REQUIRE_REDIS=1).
func needRedis(t *testing.T) {
	t.Helper()
	redistest.Binary(t)
}

// TestRunEveryPhase runs the whole tool with tiny durations and checks what
// it writes: results.json, tables.md, the charts, and with -publish the
// generated section of a BENCHMARKS.md, leaving the rest of that file alone.
func TestRunEveryPhase(t *testing.T) {
	needRedis(t)
	dir := t.TempDir()
	bm := filepath.Join(dir, "BENCHMARKS.md")
	headline := headlineBegin + "\nold headline\n" + headlineEnd
	if err := os.WriteFile(bm, []byte("# Title\n\n"+headline+"\n\nhand-written\n\n"+beginMarker+"\nold\n"+endMarker+"\n\ntail\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseFlags(flag.NewFlagSet("load", flag.ContinueOnError), []string{
		"-q", "-rounds", "2", "-conc", "1,2", "-duration", "150ms", "-warmup", "50ms", "-multi-duration", "100ms",
		"-benchtime", "200x", "-race-instances", "2", "-race-goroutines", "2", "-race-attempts", "150",
		"-e2e-rate", "300", "-e2e-duration", "200ms", "-e2e-conc", "2", "-e2e-workers", "4", "-keys", "100", "-lease-duration", "100ms",
		"-out", filepath.Join(dir, "results"), "-publish", "-report", filepath.Join(dir, "report"), "-benchmarks", bm,
	})
	if err != nil {
		t.Fatal(err)
	}
	if testing.Short() {
		cfg.phases = []string{"redis", "race"}
	}
	var printed strings.Builder
	cfg.stdout = &printed
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}

	var res Results
	b, err := os.ReadFile(filepath.Join(dir, "results", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Machine.RedisVersion == "" || len(res.Redis) == 0 || len(res.Race) == 0 {
		t.Fatalf("missing figures: %+v", res)
	}
	for _, r := range res.Redis {
		// A coalescing store shares round trips and commands between checks:
		// under one per check, but never none.
		if r.Checks == 0 || r.PerSec <= 0 || r.P99 <= 0 || r.RoundTrips <= 0 || r.RedisCmds <= 0 {
			t.Errorf("implausible run %+v", r)
		}
	}
	for _, r := range res.Race {
		if r.Peer == "sluice" && (r.Admitted != r.Limit || r.Errors != 0) {
			t.Errorf("sluice race: %+v", r)
		}
	}
	if !testing.Short() {
		if len(res.InProcess) == 0 || len(res.MultiRule) == 0 || len(res.E2E) != 2*len(E2EServers) || len(res.Leases) != 2*len(leaseShapes)*len(leaseVariants) {
			t.Errorf("phases missing: %d in-process, %d multi, %d e2e, %d lease", len(res.InProcess), len(res.MultiRule), len(res.E2E), len(res.Leases))
		}
		for _, r := range res.Leases {
			if r.Checks == 0 || r.Errors != 0 || r.admitted() == 0 || r.Scripts == 0 {
				t.Errorf("lease run %+v", r)
			}
		}
		for _, r := range res.E2E {
			// A Redis call over its budget on a loaded machine is let
			// through and counted, not an error, however many there are;
			// a store without a budget (memstore) never fails.
			if r.Requests == 0 || r.Errors != 0 || r.Non200 != 0 || (r.Server == "memstore" && r.StoreFailures != 0) {
				t.Errorf("e2e run %+v", r)
			}
			if processCPU() > 0 && r.ServerCPU <= 0 {
				t.Errorf("e2e run without the server's CPU: %+v", r)
			}
			if (isSluiceServer(r.Server) || r.Server == e2eFloor) && r.MiddlewareP99 <= 0 {
				t.Errorf("e2e run without its time in the middleware: %+v", r)
			}
		}
	}

	tables, err := os.ReadFile(filepath.Join(dir, "results", "tables.md"))
	if err != nil {
		t.Fatal(err)
	}
	wants := []string{"### The run", "### Redis-backed limiters", "This run's noise, the A/A control", "### Correctness", "| **sluice** |"}
	if !testing.Short() {
		wants = append(wants, "Ratios to the server without a limiter", "| none (again) | closed, 2 clients |")
	}
	for _, want := range wants {
		if !strings.Contains(string(tables), want) {
			t.Errorf("tables.md lacks %q", want)
		}
	}
	if want := renderHeadline(&res) + "\n" + string(tables); printed.String() != want {
		t.Errorf("printed:\n%s\nwant the headline and tables.md:\n%s", printed.String(), want)
	}
	if _, err := os.Stat(filepath.Join(dir, "report", "redis.svg")); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "report", "results.json")); err != nil {
		t.Error(err)
	}
	got, _ := os.ReadFile(bm)
	s := string(got)
	if !strings.HasPrefix(s, "# Title\n\n"+headlineBegin) || !strings.Contains(s, headlineEnd+"\n\nhand-written\n\n"+beginMarker) ||
		!strings.HasSuffix(s, endMarker+"\n\ntail\n") ||
		strings.Contains(s, "\nold\n") || strings.Contains(s, "old headline") || !strings.Contains(s, "(report/redis.svg)") {
		t.Errorf("BENCHMARKS.md not spliced as expected:\n%s", s)
	}
	if h, ok := generatedSection(s, headlineBegin, headlineEnd); !ok || h != renderHeadline(&res) {
		t.Errorf("BENCHMARKS.md: headline %q, want %q", h, renderHeadline(&res))
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 { // BENCHMARKS.md, results, report
		t.Errorf("files beside BENCHMARKS.md: %v", entries)
	}
}

func TestPublishNeedsItsFiles(t *testing.T) {
	dir := t.TempDir()
	cfg, err := parseFlags(flag.NewFlagSet("load", flag.ContinueOnError), []string{"-q", "-publish",
		"-benchmarks", filepath.Join(dir, "BENCHMARKS.md")})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "-publish") {
		t.Fatalf("run with -publish and no files to publish into: %v, want an error naming -publish", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the error came after %v: it must come before measuring", d)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files created: %v", entries)
	}
	// A BENCHMARKS.md with the tables' markers but not the headline's:
	// refused before anything is written, so the tables are not published
	// without their headline.
	bm := "# B\n\n" + beginMarker + "\n" + endMarker + "\n"
	if err := os.WriteFile(cfg.benchmarks, []byte(bm), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "BENCHMARKS.md has no section") {
		t.Fatalf("run with -publish and a BENCHMARKS.md without the headline's markers: %v, want an error naming it", err)
	}
	if b, _ := os.ReadFile(cfg.benchmarks); string(b) != bm {
		t.Errorf("BENCHMARKS.md was rewritten:\n%s", b)
	}
}

func TestParseFlagsRejects(t *testing.T) {
	for _, args := range [][]string{
		{"-phases", "redis,nope"},
		{"-conc", "0"},
		{"-conc", "x"},
		{"-e2e-rate", ""},
		{"-duration", "0s"},
	} {
		if _, err := parseFlags(flag.NewFlagSet("load", flag.ContinueOnError), args); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
	cfg, err := parseFlags(flag.NewFlagSet("load", flag.ContinueOnError), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.phases) != len(allPhases) || len(cfg.conc) != 3 || cfg.publish {
		t.Errorf("defaults: %+v", cfg)
	}
}

func TestSpliceGeneratedNeedsMarkers(t *testing.T) {
	p := filepath.Join(t.TempDir(), "B.md")
	if err := spliceGenerated(p, beginMarker, endMarker, "x\n"); err != nil { // creates the file
		t.Fatal(err)
	}
	if err := spliceGenerated(p, beginMarker, endMarker, "y\n"); err != nil { // replaces its section
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != beginMarker+"\n\ny\n\n"+endMarker+"\n" {
		t.Errorf("got %q", b)
	}
	if body, ok := generatedSection(string(b), beginMarker, endMarker); !ok || body != "y\n" {
		t.Errorf("generatedSection: %q, %v; want what was spliced", body, ok)
	}
	if err := os.WriteFile(p, []byte("no markers"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := spliceGenerated(p, beginMarker, endMarker, "z"); err == nil {
		t.Error("a file without markers must not be overwritten")
	}
}

// TestPublishedHeadlineMatchesResults checks that the headline in
// BENCHMARKS.md is the one the published results give: no figure there was
// edited by hand or left behind by a later run. README.md carries none: it
// links to BENCHMARKS.md.
func TestPublishedHeadlineMatchesResults(t *testing.T) {
	b, err := os.ReadFile("../../report/results.json")
	if err != nil {
		t.Fatal(err)
	}
	var res Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	want := renderHeadline(&res)
	text, err := os.ReadFile("../../../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	got, ok := generatedSection(string(text), headlineBegin, headlineEnd)
	if !ok {
		t.Error("BENCHMARKS.md: no generated headline")
	} else if got != want {
		t.Errorf("BENCHMARKS.md: the headline differs from bench/report/results.json's; run `go run ./cmd/load -publish` in bench/\ngot:\n%s\nwant:\n%s", got, want)
	}
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(readme), headlineBegin) || strings.Contains(string(readme), beginMarker) {
		t.Error("README.md holds a generated section: it links to BENCHMARKS.md instead")
	}
}

// TestRerenderPublishesTheSameRun checks that -rerender rewrites the
// headline and tables from the published results.json, measuring nothing
// and leaving the results as they were.
func TestRerenderPublishesTheSameRun(t *testing.T) {
	src, err := os.ReadFile("../../report/results.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	report := filepath.Join(dir, "report")
	if err := os.MkdirAll(report, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(report, "results.json"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	bm := filepath.Join(dir, "BENCHMARKS.md")
	headline := headlineBegin + "\nold headline\n" + headlineEnd
	if err := os.WriteFile(bm, []byte(headline+"\n"+beginMarker+"\nold\n"+endMarker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseFlags(flag.NewFlagSet("load", flag.ContinueOnError), []string{"-q", "-rerender",
		"-out", filepath.Join(dir, "results"), "-report", report, "-benchmarks", bm})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("-rerender took %v: it must not measure", d)
	}
	var res Results
	if err := json.Unmarshal(src, &res); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(bm)
	if got, _ := generatedSection(string(text), headlineBegin, headlineEnd); got != renderHeadline(&res) {
		t.Errorf("BENCHMARKS.md: headline not rendered from the published results:\n%s", got)
	}
	if after, _ := os.ReadFile(filepath.Join(report, "results.json")); string(after) != string(src) {
		t.Error("-rerender changed results.json")
	}
}
