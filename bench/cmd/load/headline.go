package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sluicehq/sluice/bench"
)

// The headline is one table of a run's figures against the performance targets,
// each with its verdict. -publish writes it into BENCHMARKS.md and
// README.md between the headline markers, from the same results as the
// rest, so neither file carries a figure copied by hand
// (TestPublishedHeadlineMatchesResults).
const (
	headlineBegin = "<!-- BEGIN GENERATED headline by bench/cmd/load -publish: do not edit by hand -->"
	headlineEnd   = "<!-- END GENERATED headline -->"
)

// Verdicts.
const (
	met         = "met"
	notMet      = "**not met**"
	notMeasured = "not measured in this run"
)

// headlineRow is one line of the headline: what was measured, the run's
// figure, the target and the verdict ("" for a figure without a target),
// and why the run's own noise could have decided the verdict, if it could
// (see noise.go).
type headlineRow struct {
	what, figure, target, verdict, noise string
}

// Peer names the headline looks up.
const (
	sluicePeer    = "sluice"
	coalescedPeer = "sluice (coalesced)"
	headlineConc  = 64
	headlineRate  = 10_000
	lightRate     = 2_000
)

// renderHeadline returns the headline table of res.
func renderHeadline(res *Results) string {
	var b strings.Builder
	rev := res.Versions["github.com/sluicehq/sluice"]
	if rev == "" {
		rev = "unknown"
	}
	fmt.Fprintf(&b, "From the run of %s (sluice %s), ratios within that run (noise ±30 %%). ", res.Machine.Date, rev)
	b.WriteString("Written by `go run ./cmd/load -publish`, like the tables in BENCHMARKS.md.\n\n")
	t := table{&b}
	t.head("what", "this run", "target", "verdict")
	for _, r := range headlineRows(res) {
		t.row(r.what, r.figure, r.target, verdictCell(r))
	}
	return b.String()
}

func headlineRows(res *Results) []headlineRow {
	return []headlineRow{
		memstoreSpeed(res),
		memstoreLead(res),
		coalescedThroughput(res),
		uncoalescedThroughput(res),
		redisCPU(res),
		multiRule(res),
		raceRow(res),
		httpAdded(res, headlineRate, "added p99 under 1 ms"),
		httpAdded(res, lightRate, ""),
	}
}

var inprocModes = []string{"sequential", "parallel-10k-keys", "parallel-hot-key"}

func memstoreSpeed(res *Results) headlineRow {
	r := headlineRow{what: "memstore, ns/op: sequential / parallel, 10k keys / parallel, one hot key",
		target: "under 100 ns parallel, 0 allocs", verdict: notMeasured}
	var ns []string
	allocs := int64(0)
	verdict := met
	for _, m := range inprocModes {
		ir := inproc(res, sluicePeer, m)
		if ir == nil {
			return r
		}
		ns = append(ns, fmt.Sprintf("%.0f", ir.NsPerOp))
		allocs += ir.AllocsPerOp
		if m != "sequential" && ir.NsPerOp >= 100 {
			verdict = notMet
		}
	}
	if allocs != 0 {
		verdict = notMet
	}
	r.figure = fmt.Sprintf("**%s ns**, %d allocs", strings.Join(ns, " / "), allocs)
	r.verdict = verdict
	return r
}

func memstoreLead(res *Results) headlineRow {
	r := headlineRow{what: "memstore against in-process peers: peer ns ÷ sluice ns, in the same order",
		target: "ahead of every in-process peer", verdict: notMeasured}
	var parts, behind, overlapping []string // pairs sluice is behind; pairs whose rounds overlap
	overlapBehind := 0                      // pairs behind whose rounds overlap
	for _, p := range ordered(res.InProcess, func(ir InProcessResult) string { return ir.Peer }) {
		if isSluice(p) {
			continue
		}
		var ratios []string
		for _, m := range inprocModes {
			own, peer := inproc(res, sluicePeer, m), inproc(res, p, m)
			if own == nil || peer == nil {
				ratios = append(ratios, "–")
				continue
			}
			ratio := peer.NsPerOp / own.NsPerOp
			ratios = append(ratios, fmtRatio(ratio))
			near := overlap(own, peer)
			if near {
				overlapping = append(overlapping, p+" "+m)
			}
			if ratio <= 1 {
				behind = append(behind, p+" "+m)
				if near {
					overlapBehind++
				}
			}
		}
		parts = append(parts, p+" "+strings.Join(ratios, " / "))
	}
	if len(parts) == 0 {
		return r
	}
	r.figure, r.verdict = strings.Join(parts, "; "), verdictOf(len(behind) == 0)
	switch {
	case len(behind) > 0 && overlapBehind == len(behind):
		r.noise = joinNotes(behind) + ": the rounds of the two overlap"
	case len(behind) == 0 && len(overlapping) > 0:
		r.noise = joinNotes(overlapping) + ": the rounds of the two overlap"
	}
	return r
}

func coalescedThroughput(res *Results) headlineRow {
	r := headlineRow{what: fmt.Sprintf("Redis, 1 rule, %d goroutines, coalesced", headlineConc),
		target: "≥ 1.5× redis_rate's checks/s and ≥ ulule's, p99 no worse", verdict: notMeasured}
	own := redisRun(res.Redis, coalescedPeer, 1, headlineConc)
	rr, ul := redisRun(res.Redis, "redis_rate", 1, headlineConc), redisRun(res.Redis, "ulule", 1, headlineConc)
	if own == nil || rr == nil || ul == nil {
		return r
	}
	r.figure = fmt.Sprintf("%s checks/s, p99 %s: **%s redis_rate, %s ulule** (their p99 %s, %s)",
		fmtRate(own.PerSec), fmtDur(own.P99), fmtRatio(own.PerSec/rr.PerSec), fmtRatio(own.PerSec/ul.PerSec),
		fmtDur(rr.P99), fmtDur(ul.P99))
	r.verdict = verdictOf(own.PerSec >= 1.5*rr.PerSec && own.PerSec >= ul.PerSec && own.P99 <= rr.P99 && own.P99 <= ul.P99)
	if perSec, p99, ok := redisNoise(res); ok {
		var notes []string
		if within(own.PerSec, 1.5*rr.PerSec, perSec) {
			notes = append(notes, "1.5× redis_rate")
		}
		if within(own.PerSec, ul.PerSec, perSec) {
			notes = append(notes, "ulule's checks/s")
		}
		if within(float64(own.P99), float64(rr.P99), p99) || within(float64(own.P99), float64(ul.P99), p99) {
			notes = append(notes, "their p99")
		}
		if len(notes) > 0 {
			r.noise = fmt.Sprintf("%s within the A/A control's %s (checks/s) and %s (p99)", joinNotes(notes), pct(perSec), pct(p99))
		}
	}
	return r
}

func uncoalescedThroughput(res *Results) headlineRow {
	r := headlineRow{what: fmt.Sprintf("Redis, 1 rule, %d goroutines, one script call per check", headlineConc),
		target: "≥ the plain-Lua baseline's checks/s", verdict: notMeasured}
	own := redisRun(res.Redis, sluicePeer, 1, headlineConc)
	pl, rr := redisRun(res.Redis, "plain-lua", 1, headlineConc), redisRun(res.Redis, "redis_rate", 1, headlineConc)
	if own == nil || pl == nil || rr == nil {
		return r
	}
	r.figure = fmt.Sprintf("%s checks/s: **%s plain Lua**, %s redis_rate; p99 %s (plain Lua %s)",
		fmtRate(own.PerSec), fmtRatio(own.PerSec/pl.PerSec), fmtRatio(own.PerSec/rr.PerSec), fmtDur(own.P99), fmtDur(pl.P99))
	if ctl := redisRun(res.Redis, bench.ControlPeer, 1, headlineConc); ctl != nil {
		// The verdict stays the target's; the control shows how far two
		// instances of one limiter drifted apart in this run.
		r.figure += fmt.Sprintf("; A/A control: a second plain-Lua instance made %s the first's", fmtRatio(ctl.PerSec/pl.PerSec))
	}
	r.verdict = verdictOf(own.PerSec >= pl.PerSec)
	if perSec, _, ok := redisNoise(res); ok && within(own.PerSec, pl.PerSec, perSec) {
		side := "ahead of"
		if own.PerSec < pl.PerSec {
			side = "behind"
		}
		r.noise = fmt.Sprintf("%s %s plain Lua, and its A/A control %s off", pct(math.Abs(own.PerSec/pl.PerSec-1)), side, pct(perSec))
	}
	return r
}

func redisCPU(res *Results) headlineRow {
	r := headlineRow{what: fmt.Sprintf("Redis CPU per check, %d goroutines", headlineConc), target: "–", verdict: "–"}
	var parts []string
	for _, p := range []string{sluicePeer, coalescedPeer, "redis_rate", "plain-lua", "ulule"} {
		if run := redisRun(res.Redis, p, 1, headlineConc); run != nil {
			parts = append(parts, fmt.Sprintf("%s %.1f µs", p, run.RedisCPU))
		}
	}
	if len(parts) == 0 {
		r.verdict = notMeasured
		return r
	}
	r.figure = strings.Join(parts, ", ")
	return r
}

func multiRule(res *Results) headlineRow {
	rules := 1
	for _, run := range res.MultiRule {
		rules = max(rules, run.Rules)
	}
	r := headlineRow{what: fmt.Sprintf("%d rules in one request against 1, one goroutine", rules),
		target: "latency at most 1.3× one rule's", verdict: notMeasured}
	if rules == 1 {
		return r
	}
	var parts []string
	ok := true
	for _, p := range []string{sluicePeer, coalescedPeer} {
		one, many := redisRun(res.MultiRule, p, 1, 1), redisRun(res.MultiRule, p, rules, 1)
		if one == nil || many == nil || one.P50 <= 0 || one.Mean <= 0 {
			return r
		}
		p50 := float64(many.P50) / float64(one.P50)
		ok = ok && p50 <= 1.3
		parts = append(parts, fmt.Sprintf("%s: **%s p50**, %s mean", p, fmtRatio(p50), fmtRatio(float64(many.Mean)/float64(one.Mean))))
	}
	r.figure, r.verdict = strings.Join(parts, "; "), verdictOf(ok)
	return r
}

func raceRow(res *Results) headlineRow {
	r := headlineRow{what: "instances racing on one key", target: "admit exactly the limit", verdict: notMeasured}
	var parts []string
	ok := true
	for _, row := range res.Race {
		if isSluice(row.Peer) {
			parts = append(parts, fmt.Sprintf("%s admitted %d of limit %d", row.Peer, row.Admitted, row.Limit))
			ok = ok && row.Admitted == row.Limit && row.Errors == 0
		}
	}
	if len(parts) == 0 {
		return r
	}
	r.figure, r.verdict = strings.Join(parts, "; "), verdictOf(ok)
	return r
}

// httpAdded is the HTTP row at rate: the p99 each store adds to the server
// without a limiter, and its p99 inside the middleware. With a target, the
// verdict is the default Redis store's ("redis": no coalescing), the one a
// user gets without tuning: it is met when that adds under a millisecond,
// whatever the coalescing variant does.
func httpAdded(res *Results, rate int, target string) headlineRow {
	r := headlineRow{what: fmt.Sprintf("HTTP at %d req/s: p99 added to the server without a limiter (inside the middleware)", rate),
		target: "–", verdict: "–"}
	if target != "" {
		r.target = target + ", against local Redis (verdict: the default store, `redis`)"
	}
	none := e2eRun(res, "none", "open", rate)
	if none == nil {
		r.verdict = notMeasured
		return r
	}
	var parts []string
	verdictAdded := time.Duration(math.MaxInt64) // the default Redis store's
	for _, server := range []string{"redis", "redis-coalesced", "memstore"} {
		run := e2eRun(res, server, "open", rate)
		if run == nil {
			continue
		}
		added := run.P99 - none.P99
		if server == "redis" {
			verdictAdded = added
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)", server, signedDur(added), fmtDur(run.MiddlewareP99)))
	}
	if len(parts) == 0 {
		r.verdict = notMeasured
		return r
	}
	r.figure = strings.Join(parts, ", ") + fmt.Sprintf("; the server alone: p99 %s", fmtDur(none.P99))
	if floor := e2eRun(res, e2eFloor, "open", rate); floor != nil {
		r.figure += fmt.Sprintf("; the floor, one plain-Lua EVALSHA per request: %s (%s)",
			signedDur(floor.P99-none.P99), fmtDur(floor.MiddlewareP99))
	}
	if ctl := e2eRun(res, e2eControl, "open", rate); ctl != nil {
		r.figure += fmt.Sprintf("; A/A control, a second server without a limiter: %s", signedDur(ctl.P99-none.P99))
	}
	switch {
	case target == "":
	case verdictAdded == math.MaxInt64:
		r.verdict = notMeasured
	default:
		r.verdict = verdictOf(verdictAdded < time.Millisecond)
		margin := max(verdictAdded-time.Millisecond, time.Millisecond-verdictAdded)
		if d, ok := httpNoise(res, rate); ok && margin <= d {
			r.noise = fmt.Sprintf("%s from the target, and its A/A control %s off", fmtDur(margin), fmtDur(d))
		}
	}
	return r
}

func verdictOf(ok bool) string {
	if ok {
		return met
	}
	return notMet
}
