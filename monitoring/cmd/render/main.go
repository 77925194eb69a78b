// Command render draws sluice's Grafana dashboard (grafana-dashboard.json)
// from a real run, without Grafana or Prometheus.
//
// It serves an HTTP handler behind sluice's middleware on a redis-server of
// its own (started on a free loopback port, reached through a fault proxy),
// with a few rules: per client (on_fail: local), per API key (leased, with
// hot-key detection), a global one on checkout (on_fail: closed), and a
// per-visitor rule on the in-process store. Seven clients send about 200
// requests a second over HTTP, in phases: normal; Redis 80 ms slower than
// the 50 ms budget; two clients over their limit; Redis black-holed;
// recovery. On the way an operator resets a bucket, Redis loses its
// scripts and every bucket key is overwritten with something that is not a
// bucket.
//
// Every second the metrics registry is scraped into a Prometheus TSDB in a
// temporary directory. At the end every panel's queries are evaluated with
// the PromQL engine over the run ($__rate_interval is 5s, $job matches every
// job), the dashboard is drawn as one SVG, panels placed by their gridPos,
// and one line per panel is printed.
//
// From the monitoring directory:
//
//	go run ./cmd/render -duration 75s -out dashboard.svg
//
// redis-server must be on PATH.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/tsdb"
)

func main() {
	dash := flag.String("dashboard", "grafana-dashboard.json", "the Grafana dashboard to draw")
	out := flag.String("out", "dashboard.svg", "where to write the picture")
	duration := flag.Duration("duration", 75*time.Second, "length of the run, shared among its phases")
	flag.Parse()
	if _, err := render(*dash, *out, *duration, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
}

// render runs the scenario for d, draws the dashboard at dashPath into
// out and writes a line per panel to w. It returns the dashboard with
// every panel's series.
func render(dashPath, out string, d time.Duration, w io.Writer) (*dashboard, error) {
	dash, err := readDashboard(dashPath)
	if err != nil {
		return nil, err
	}
	spans, db, cleanup, err := record(d)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	start, end := spans[0].Start, spans[len(spans)-1].End
	if err := evaluate(dash, db, start, end, time.Second); err != nil {
		return nil, err
	}
	f, err := os.Create(out)
	if err != nil {
		return nil, err
	}
	if err := draw(f, dash, spans, start, end); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	summarize(w, dash)
	return dash, nil
}

// record runs the scenario for d, scraping its metrics into a TSDB every
// second. It returns the phases as they ran and the TSDB, which cleanup
// closes and removes.
func record(d time.Duration) (spans []span, db *tsdb.DB, cleanup func(), err error) {
	log := slog.New(slog.DiscardHandler)
	sys, err := start(log)
	if err != nil {
		return nil, nil, nil, err
	}
	defer sys.close()
	db, cleanup, err = openTSDB(log)
	if err != nil {
		return nil, nil, nil, err
	}

	ctx, stop := context.WithCancel(context.Background())
	var greedy atomic.Bool
	loaded := make(chan struct{})
	go func() { sys.load(ctx, greedy.Load); close(loaded) }()
	scraped := make(chan error, 1)
	go func() { scraped <- scrapeEverySecond(ctx, sys, db) }()
	spans, runErr := runPhases(sys, d, &greedy)
	stop()
	<-loaded
	if err := <-scraped; runErr == nil {
		runErr = err
	}
	if runErr == nil {
		runErr = scrape(sys.reg, db, time.Now())
	}
	if runErr != nil {
		cleanup()
		return nil, nil, nil, runErr
	}
	return spans, db, cleanup, nil
}

// openTSDB opens a TSDB in a temporary directory, which cleanup closes
// and removes.
func openTSDB(log *slog.Logger) (db *tsdb.DB, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "sluice-render-")
	if err != nil {
		return nil, nil, err
	}
	db, err = tsdb.Open(dir, log, nil, tsdb.DefaultOptions(), nil)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return db, func() { db.Close(); os.RemoveAll(dir) }, nil
}

// scrapeEverySecond scrapes sys's metrics into db at once and then every
// second until ctx ends, or until a scrape fails, returning its error.
func scrapeEverySecond(ctx context.Context, sys *system, db *tsdb.DB) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if err := scrape(sys.reg, db, time.Now()); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// runPhases runs the phases, each for its share of d: it applies the
// phase's fault, tells the load through greedy whether the greedy clients
// are over their limit, and runs the phase's events halfway through. It
// stops after the phase whose events fail, with their error.
func runPhases(sys *system, d time.Duration, greedy *atomic.Bool) ([]span, error) {
	var spans []span
	for _, p := range phases {
		s := span{Name: p.Name, Start: time.Now()}
		if p.fault != nil {
			p.fault(sys.proxy)
		}
		greedy.Store(p.greedy)
		length := time.Duration(float64(d) * p.share)
		time.Sleep(length / 2)
		var err error
		if p.events != nil {
			err = p.events(sys)
		}
		time.Sleep(length - length/2)
		s.End = time.Now()
		spans = append(spans, s)
		if err != nil {
			return spans, err
		}
	}
	return spans, nil
}
