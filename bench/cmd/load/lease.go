package main

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/bench"
	"github.com/sluicehq/sluice/bench/internal/redisinfo"
	"github.com/sluicehq/sluice/store/lease"
	"github.com/sluicehq/sluice/store/redisstore"
)

// The lease phase floods one spent key flat out, in two shapes: 4
// instances × 8 goroutines on a 2,000/s key, and one instance × 32
// goroutines on a 20,000/s key. Each instance is a store with its own
// client as the README sets it up (redisstore.NewClient, zero Config but
// the Secret: refusals remembered, coalescing on). In every round each
// shape runs the Redis store alone, the lease store over it
// (lease.Config{Instances: N}), and the Redis store alone again (the A/A
// control), each on a fresh spent key, so that only what refills is
// admitted.

// leaseShape is one flood of the lease phase.
type leaseShape struct {
	Name       string `json:"name"`
	Instances  int    `json:"instances"`
	Goroutines int    `json:"goroutines"` // in all
	Rate       int64  `json:"rate_per_sec"`
}

var leaseShapes = []leaseShape{
	{"4 × 8, 2,000/s", 4, 32, 2000},
	{"1 × 32, 20,000/s", 1, 32, 20_000},
}

// leaseVariants are the stores each shape runs, in this order each round.
var leaseVariants = []string{"redis", "lease", "redis (again)"}

// LeaseRun is one variant of one shape in one round of the lease phase.
type LeaseRun struct {
	Shape    string        `json:"shape"`
	Variant  string        `json:"variant"`
	Round    int           `json:"round"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	Checks   int64         `json:"checks"` // answered, admitted or refused
	Admitted []int64       `json:"admitted"`
	Errors   int64         `json:"errors"`
	Scripts  int64         `json:"scripts"` // EVALSHA and EVAL calls, INFO commandstats
	// Refilled is what the key refilled over the run: its rate × elapsed.
	Refilled int64 `json:"refilled"`
}

func (r LeaseRun) admitted() int64 {
	var n int64
	for _, a := range r.Admitted {
		n += a
	}
	return n
}

// PerSec returns the checks answered a second.
func (r LeaseRun) PerSec() float64 { return float64(r.Checks) / r.Elapsed.Seconds() }

// ScriptsPerAdmitted returns the script calls per admitted check.
func (r LeaseRun) ScriptsPerAdmitted() float64 {
	return float64(r.Scripts) / float64(max(1, r.admitted()))
}

// MinShare returns the smallest instance's share of the admissions.
func (r LeaseRun) MinShare() float64 {
	return float64(slices.Min(r.Admitted)) / float64(max(1, r.admitted()))
}

// runLeasePhase runs every shape's variants cfg.rounds times, interleaved.
func runLeasePhase(ctx context.Context, cfg config, addr string, admin *redis.Client, problem func(string, ...any)) []LeaseRun {
	var out []LeaseRun
	for round := range cfg.rounds {
		for _, sh := range leaseShapes {
			for _, v := range leaseVariants {
				if ctx.Err() != nil {
					return out
				}
				key := fmt.Sprintf("lease-phase:%d:%d:%s:%d", round, sh.Rate, v, time.Now().UnixNano())
				r, err := floodLease(ctx, addr, sh, v, key, cfg.leaseDuration, admin)
				if err != nil {
					problem("lease %s %s: %v", sh.Name, v, err)
					continue
				}
				r.Round = round + 1
				logf("lease round %d %-17s %-14s %9.0f checks/s, admitted %d of %d refilled, %.4f scripts per admitted, min share %.2f, %d errors",
					r.Round, sh.Name, v, r.PerSec(), r.admitted(), r.Refilled, r.ScriptsPerAdmitted(), r.MinShare(), r.Errors)
				if r.Errors > 0 {
					problem("lease %s %s: %d checks failed", sh.Name, v, r.Errors)
				}
				out = append(out, r)
			}
		}
	}
	return out
}

// floodLease runs one variant of sh on key for d, after a short untimed
// flood (connections dialled, leases sized), and reports what it did.
func floodLease(ctx context.Context, addr string, sh leaseShape, variant, key string, d time.Duration, admin *redis.Client) (LeaseRun, error) {
	stores := make([]sluice.Store, sh.Instances)
	for i := range stores {
		c, err := redisstore.NewClient(addr)
		if err != nil {
			return LeaseRun{}, err
		}
		defer c.Close()
		r, err := redisstore.New(c, redisstore.Config{Secret: bench.Secret, PresenceInterval: -1, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return LeaseRun{}, err
		}
		defer r.Close(context.Background())
		stores[i] = r
		if variant == "lease" {
			l, err := lease.New(r, lease.Config{Instances: sh.Instances, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				return LeaseRun{}, err
			}
			defer l.Close(context.Background())
			stores[i] = l
		}
	}
	limit := sluice.PerSecond(sh.Rate)
	hit := sluice.Hit{Key: key, Limit: limit}
	spend := hit
	spend.Cost = limit.Capacity()
	var res [1]sluice.Result
	if err := stores[0].Take(ctx, []sluice.Hit{spend}, res[:]); err != nil || !res[0].Allowed {
		return LeaseRun{}, fmt.Errorf("spending the bucket: %v %+v", err, res[0])
	}
	if variant == "lease" {
		hit.Lease = &sluice.LeasePolicy{Rule: "flood", Enabled: true}
	}
	flood(ctx, stores, hit, sh.Goroutines, 250*time.Millisecond) // warm-up: connections dialled, leases sized, the backlog taken
	before, err := scriptCalls(ctx, admin)
	if err != nil {
		return LeaseRun{}, err
	}
	r := flood(ctx, stores, hit, sh.Goroutines, d)
	after, err := scriptCalls(ctx, admin)
	if err != nil {
		return LeaseRun{}, err
	}
	r.Shape, r.Variant, r.Scripts = sh.Name, variant, int64(after-before)
	r.Refilled = int64(r.Elapsed.Seconds() * float64(sh.Rate))
	return r, nil
}

// flood runs goroutines spread evenly over stores (the instances), each
// checking hit flat out for d, and returns what each instance admitted.
func flood(ctx context.Context, stores []sluice.Store, hit sluice.Hit, goroutines int, d time.Duration) LeaseRun {
	r := LeaseRun{Admitted: make([]int64, len(stores))}
	var stop atomic.Bool
	var mu sync.Mutex
	var wg sync.WaitGroup
	timer := time.AfterFunc(d, func() { stop.Store(true) })
	defer timer.Stop()
	start := time.Now()
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			i := g % len(stores)
			hits := []sluice.Hit{hit}
			out := make([]sluice.Result, 1)
			var admitted, checks, errs int64
			for !stop.Load() && ctx.Err() == nil {
				if err := stores[i].Take(ctx, hits, out); err != nil {
					errs++
					continue
				}
				checks++
				if out[0].Allowed {
					admitted++
				}
				runtime.Gosched() // the instances share one scheduler here, as separate processes would not
			}
			mu.Lock()
			r.Admitted[i] += admitted
			r.Checks += checks
			r.Errors += errs
			mu.Unlock()
		}()
	}
	wg.Wait()
	r.Elapsed = time.Since(start)
	return r
}

// scriptCalls returns how many scripts the server has run.
func scriptCalls(ctx context.Context, admin *redis.Client) (uint64, error) {
	info, err := admin.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, err
	}
	calls := redisinfo.CommandCalls(redisinfo.ParseInfo(info))
	return calls["evalsha"] + calls["eval"], nil
}

// leaseMedian returns the median and range of f over the runs of variant
// of shape.
func leaseMedian(runs []LeaseRun, shape, variant string, f func(LeaseRun) float64) (float64, string) {
	var xs []float64
	for _, r := range runs {
		if r.Shape == shape && r.Variant == variant {
			xs = append(xs, f(r))
		}
	}
	return medianRange(xs)
}

// leaseRatio returns the median and range over rounds of f(a) ÷ f(b),
// a and b being variants of shape in the same round.
func leaseRatio(runs []LeaseRun, shape, a, b string, f func(LeaseRun) float64) (float64, string) {
	byRound := map[int]map[string]LeaseRun{}
	for _, r := range runs {
		if r.Shape != shape {
			continue
		}
		if byRound[r.Round] == nil {
			byRound[r.Round] = map[string]LeaseRun{}
		}
		byRound[r.Round][r.Variant] = r
	}
	var xs []float64
	for _, m := range byRound {
		ra, okA := m[a]
		rb, okB := m[b]
		if okA && okB && f(rb) > 0 {
			xs = append(xs, f(ra)/f(rb))
		}
	}
	return medianRange(xs)
}

// medianRange returns the median of xs and their range as "(lo–hi)", or
// 0 and "" when there are none.
func medianRange(xs []float64) (float64, string) {
	if len(xs) == 0 {
		return 0, ""
	}
	slices.Sort(xs)
	return xs[len(xs)/2], fmt.Sprintf("(%s–%s)", fmtSig(xs[0]), fmtSig(xs[len(xs)-1]))
}

// fmtSig formats x with about three significant figures.
func fmtSig(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.2f M", x/1e6)
	case x >= 1e4:
		return fmt.Sprintf("%.0f k", x/1e3)
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	default:
		return fmt.Sprintf("%.3g", x)
	}
}

// renderLease writes the lease phase's tables.
func renderLease(b *strings.Builder, res *Results) {
	t := table{b}
	runs := res.Leases
	b.WriteString("### Leases on a key over its limit\n\n")
	fmt.Fprintf(b, "One spent key flooded flat out: each instance a store with its own client as the README sets it up "+
		"(refusals remembered, coalescing on), alone (`redis`), under the lease store (`lease`, `lease.Config{Instances: N}`), "+
		"and alone again (the A/A control), interleaved, each on a fresh spent key, %v each, %d rounds; medians (ranges). "+
		"Checks answered a second count admitted and refused checks; script calls from `INFO commandstats`.\n\n",
		res.Settings.LeaseDuration, res.Settings.Rounds)
	t.head("shape", "store", "checks answered a second", "script calls per admitted check", "admitted ÷ refilled", "smallest share")
	for _, sh := range leaseShapes {
		for _, v := range leaseVariants {
			perSec, perSecR := leaseMedian(runs, sh.Name, v, LeaseRun.PerSec)
			if perSecR == "" {
				continue
			}
			spa, spaR := leaseMedian(runs, sh.Name, v, LeaseRun.ScriptsPerAdmitted)
			adm, _ := leaseMedian(runs, sh.Name, v, func(r LeaseRun) float64 { return float64(r.admitted()) / float64(max(1, r.Refilled)) })
			share := "—"
			if sh.Instances > 1 {
				m, mr := leaseMedian(runs, sh.Name, v, LeaseRun.MinShare)
				share = fmt.Sprintf("%.2f %s", m, mr)
			}
			t.row(sh.Name, v, fmtSig(perSec)+" "+perSecR, fmt.Sprintf("%.3g %s", spa, spaR), fmt.Sprintf("%.3f", adm), share)
		}
	}
	b.WriteString("\n")
	t.head("ratio, in the same round", leaseShapes[0].Name, leaseShapes[1].Name, "target")
	cell := func(sh leaseShape, a, bb string) string {
		m, r := leaseRatio(runs, sh.Name, a, bb, LeaseRun.PerSec)
		if r == "" {
			return "—"
		}
		return fmt.Sprintf("%.2f %s", m, r)
	}
	faster := func(sh leaseShape) string {
		var xs []float64
		byRound := map[int]map[string]float64{}
		for _, r := range runs {
			if r.Shape == sh.Name {
				if byRound[r.Round] == nil {
					byRound[r.Round] = map[string]float64{}
				}
				byRound[r.Round][r.Variant] = r.PerSec()
			}
		}
		for _, m := range byRound {
			l, ok := m["lease"]
			base := max(m["redis"], m["redis (again)"])
			if ok && base > 0 {
				xs = append(xs, l/base)
			}
		}
		med, rg := medianRange(xs)
		if rg == "" {
			return "—"
		}
		return fmt.Sprintf("%.2f %s", med, rg)
	}
	t.row("checks answered a second, lease ÷ the faster of the two runs without", faster(leaseShapes[0]), faster(leaseShapes[1]), "≥ 1.0")
	t.row("A/A: the second run without ÷ the first", cell(leaseShapes[0], "redis (again)", "redis"), cell(leaseShapes[1], "redis (again)", "redis"), "")
	spa := func(sh leaseShape) string {
		m, r := leaseMedian(runs, sh.Name, "lease", LeaseRun.ScriptsPerAdmitted)
		if r == "" {
			return "—"
		}
		return fmt.Sprintf("%.3g %s", m, r)
	}
	t.row("script calls per admitted check with leases", spa(leaseShapes[0]), spa(leaseShapes[1]), "≤ 0.25")
	b.WriteString("\n")
}
