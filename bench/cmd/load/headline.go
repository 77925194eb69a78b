package main

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/bench"
)

// The headline is one short table of a run: each figure a ratio to the
// peers or to the floor measured in the same run, beside that run's own
// noise. -publish writes it into BENCHMARKS.md between the headline
// markers, from the same results as the tables, so no figure there is
// copied by hand (TestPublishedHeadlineMatchesResults). README.md links to
// BENCHMARKS.md and carries no generated figure.
const (
	headlineBegin = "<!-- BEGIN GENERATED headline by bench/cmd/load -publish: do not edit by hand -->"
	headlineEnd   = "<!-- END GENERATED headline -->"
)

// notMeasured fills a row whose phase did not run.
const notMeasured = "not measured in this run"

// headlineRow is one line of the headline: what was measured, the run's
// figures, and the noise the run measured in itself for them (see
// noise.go).
type headlineRow struct {
	what, figure, noise string
}

// Names the headline looks up.
const (
	sluicePeer      = "sluice"
	uncoalescedPeer = "sluice (one call per check)"
	versusPeer      = "ulule"
	plainLua        = "plain-lua"
	headlineConc    = 64
)

// headlineRedisPeers are the Redis peers the headline names: the two
// cheapest one-round-trip libraries and the floor. The tables have them
// all.
var headlineRedisPeers = []string{"ulule", "redis_rate", plainLua}

// renderHeadline returns the headline table of res.
func renderHeadline(res *Results) string {
	var b strings.Builder
	rev := res.Versions["github.com/sluicehq/sluice"]
	if rev == "" {
		rev = "unknown"
	}
	fmt.Fprintf(&b, "From the run of %s (sluice %s; %d CPUs shared by the load generator, Redis and the HTTP server; "+
		"load average %s before the run). Every figure is a ratio within that run; the last column is the noise the "+
		"run measured in itself. Written by `go run ./cmd/load -publish`, like the tables under Results.\n\n",
		res.Machine.Date, rev, res.Machine.NumCPU, orDash(res.Machine.LoadBefore))
	t := table{&b}
	t.head("what", "this run", "noise in this run")
	for _, r := range headlineRows(res) {
		t.row(r.what, r.figure, r.noise)
	}
	return b.String()
}

func headlineRows(res *Results) []headlineRow {
	rows := []headlineRow{
		inProcessRow(res),
		versusRow(res),
		redisRow(res, sluicePeer, "sluice as the README sets it up (concurrent checks share script calls)"),
		redisRow(res, uncoalescedPeer, "one script call per check"),
		redisCPURow(res),
		multiRuleRow(res),
		raceRow(res),
	}
	for _, rate := range res.Settings.E2ERates {
		rows = append(rows, httpOpenRow(res, rate))
	}
	return append(rows, httpClosedRow(res))
}

// inprocModes are the names of [bench.InProcessModes], in order.
var inprocModes = func() []string {
	var names []string
	for _, m := range bench.InProcessModes {
		names = append(names, m.Name)
	}
	return names
}()

func inProcessRow(res *Results) headlineRow {
	r := headlineRow{what: "In process (memstore): peer ns/op ÷ sluice ns/op, sequential / parallel over 10k keys / " +
		"parallel on one hot key (above 1×: sluice is faster)", figure: notMeasured, noise: "–"}
	var own []string
	allocs := int64(0)
	for _, m := range inprocModes {
		ir := inproc(res, sluicePeer, m)
		if ir == nil {
			return r
		}
		own = append(own, fmt.Sprintf("%.0f", ir.NsPerOp))
		allocs += ir.AllocsPerOp
	}
	parts := []string{fmt.Sprintf("sluice %s ns, %d allocs", strings.Join(own, " / "), allocs)}
	var overlapping []string
	for _, p := range ordered(res.InProcess, func(ir InProcessResult) string { return ir.Peer }) {
		if isSluice(p) {
			continue
		}
		var ratios []string
		for _, m := range inprocModes {
			s, o := inproc(res, sluicePeer, m), inproc(res, p, m)
			if o == nil {
				ratios = append(ratios, "–")
				continue
			}
			ratios = append(ratios, fmtRatio(o.NsPerOp/s.NsPerOp))
			if overlap(s, o) {
				overlapping = append(overlapping, p+" "+m)
			}
		}
		parts = append(parts, p+" "+strings.Join(ratios, " / "))
	}
	r.figure = strings.Join(parts, "; ")
	r.noise = roundsNoise(res, overlapping)
	return r
}

// redisRow is sluice variant own against the headline's Redis peers at
// headlineConc goroutines: checks/s ÷ theirs, and p99 ÷ theirs.
func redisRow(res *Results, own, how string) headlineRow {
	r := headlineRow{what: fmt.Sprintf("Redis, one rule, %d goroutines, %s: checks/s ÷ peer's (p99 ÷ peer's)",
		headlineConc, how), figure: notMeasured, noise: "–"}
	s := redisRun(res.Redis, own, 1, headlineConc)
	if s == nil {
		return r
	}
	var parts []string
	for _, p := range headlineRedisPeers {
		if o := redisRun(res.Redis, p, 1, headlineConc); o != nil {
			parts = append(parts, fmt.Sprintf("%s %s (%s)", peerLabel(p), fmtRatio(s.PerSec/o.PerSec),
				fmtRatio(float64(s.P99)/float64(o.P99))))
		}
	}
	r.figure = strings.Join(append(parts, fmt.Sprintf("sluice's own: %s checks/s, p99 %s", fmtRate(s.PerSec), fmtDur(s.P99))), "; ")
	if c, ok := redisControl(res.Redis, headlineConc); ok {
		r.noise = fmt.Sprintf("A/A control (a second sluice instance ÷ the first): %s checks/s (%s p99)",
			fmtRatio(c.perSec), fmtRatio(c.p99))
	}
	return r
}

func redisCPURow(res *Results) headlineRow {
	r := headlineRow{what: fmt.Sprintf("Redis CPU per check, %d goroutines, ÷ the plain-Lua floor's", headlineConc),
		figure: notMeasured, noise: "–"}
	floor := redisRun(res.Redis, plainLua, 1, headlineConc)
	if floor == nil || floor.RedisCPU <= 0 {
		return r
	}
	var parts []string
	for _, p := range append([]string{sluicePeer, uncoalescedPeer}, headlineRedisPeers[:len(headlineRedisPeers)-1]...) {
		if o := redisRun(res.Redis, p, 1, headlineConc); o != nil {
			parts = append(parts, fmt.Sprintf("%s %s", p, fmtRatio(o.RedisCPU/floor.RedisCPU)))
		}
	}
	r.figure = strings.Join(parts, ", ") + fmt.Sprintf(" (the floor: %.1f µs)", floor.RedisCPU)
	if c, ok := redisControl(res.Redis, headlineConc); ok && c.cpu > 0 {
		r.noise = fmt.Sprintf("A/A control: %s", fmtRatio(c.cpu))
	}
	return r
}

func multiRuleRow(res *Results) headlineRow {
	rules := 1
	for _, run := range res.MultiRule {
		rules = max(rules, run.Rules)
	}
	r := headlineRow{what: fmt.Sprintf("%d rules per check ÷ 1 rule, p50, one goroutine (sluice: one script call; "+
		"the others: one call per rule)", rules), figure: notMeasured, noise: "–"}
	if rules == 1 {
		return r
	}
	var own, others []string
	for _, p := range ordered(res.MultiRule, func(run RedisRun) string { return run.Peer }) {
		one, many := redisRun(res.MultiRule, p, 1, 1), redisRun(res.MultiRule, p, rules, 1)
		if one == nil || many == nil || one.P50 <= 0 {
			continue
		}
		part := fmt.Sprintf("%s %s", p, fmtRatio(float64(many.P50)/float64(one.P50)))
		if isSluice(p) {
			own = append(own, part)
		} else {
			others = append(others, part)
		}
	}
	if len(own) == 0 {
		return r
	}
	r.figure = strings.Join(own, ", ")
	if len(others) > 0 {
		r.figure += "; " + strings.Join(others, ", ")
	}
	if c, ok := redisControl(res.Redis, 1); ok && c.p50 > 0 {
		r.noise = fmt.Sprintf("A/A control at one goroutine: %s p50", fmtRatio(c.p50))
	}
	return r
}

func raceRow(res *Results) headlineRow {
	r := headlineRow{what: "Instances racing on one key: admitted of the limit", figure: notMeasured,
		noise: "none: an exact count"}
	if len(res.Race) == 0 {
		return r
	}
	first := res.Race[0]
	r.what = fmt.Sprintf("%d instances racing on one key: admitted of a limit of %d", first.Instances, first.Limit)
	var parts []string
	for _, row := range res.Race {
		part := fmt.Sprintf("%s %d", row.Peer, row.Admitted)
		if row.Errors > 0 {
			part += fmt.Sprintf(" (%d checks failed)", row.Errors)
		}
		parts = append(parts, part)
	}
	r.figure = strings.Join(parts, ", ")
	return r
}

// httpOpenRow is the HTTP open loop at rate: each server's p99 ÷ the
// server without a limiter's, and sluice's Redis middleware's ÷ the
// floor's.
func httpOpenRow(res *Results, rate int) headlineRow {
	r := headlineRow{what: fmt.Sprintf("HTTP, open loop at %d req/s: p99 ÷ the server without a limiter's", rate),
		figure: notMeasured, noise: "–"}
	none := e2eRun(res, "none", "open", rate)
	if none == nil || none.P99 <= 0 {
		return r
	}
	r.what += fmt.Sprintf(" (%s)", fmtDur(none.P99))
	ratio := func(server string) (float64, bool) {
		if run := e2eRun(res, server, "open", rate); run != nil {
			return float64(run.P99) / float64(none.P99), true
		}
		return 0, false
	}
	var parts []string
	for _, s := range []string{"memstore", "redis", "redis-coalesced"} {
		if x, ok := ratio(s); ok {
			parts = append(parts, s+" "+fmtRatio(x))
		}
	}
	if x, ok := ratio(e2eFloor); ok {
		parts = append(parts, "the floor (one plain-Lua EVALSHA per request) "+fmtRatio(x))
		if y, ok := ratio("redis"); ok {
			parts = append(parts, "redis ÷ the floor "+fmtRatio(y/x))
		}
	}
	if len(parts) == 0 {
		return r
	}
	r.figure = strings.Join(parts, ", ")
	if x, ok := ratio(e2eControl); ok {
		r.noise = "A/A control (a second server without a limiter): " + fmtRatio(x)
	}
	return r
}

// httpClosedRow is the HTTP closed loop: each server's req/s ÷ the server
// without a limiter's, and its CPU per request ÷ the floor's.
func httpClosedRow(res *Results) headlineRow {
	r := headlineRow{what: "HTTP at saturation (closed loop): req/s ÷ the server without a limiter's; " +
		"server CPU per request ÷ the floor's", figure: notMeasured, noise: "–"}
	none := e2eRun(res, "none", "closed", 0)
	if none == nil || none.PerSec <= 0 {
		return r
	}
	floor := e2eRun(res, e2eFloor, "closed", 0)
	var rates, cpus []string
	for _, s := range []string{"memstore", "redis", "redis-coalesced", e2eFloor} {
		run := e2eRun(res, s, "closed", 0)
		if run == nil {
			continue
		}
		name := s
		if s == e2eFloor {
			name = "the floor"
		}
		rates = append(rates, name+" "+fmtRatio(run.PerSec/none.PerSec))
		if floor != nil && floor.ServerCPU > 0 && run.ServerCPU > 0 && s != e2eFloor && s != "memstore" {
			cpus = append(cpus, s+" "+fmtRatio(float64(run.ServerCPU)/float64(floor.ServerCPU)))
		}
	}
	if len(rates) == 0 {
		return r
	}
	r.figure = strings.Join(rates, ", ")
	if len(cpus) > 0 {
		r.figure += "; CPU per request: " + strings.Join(cpus, ", ")
	}
	if ctl := e2eRun(res, e2eControl, "closed", 0); ctl != nil {
		r.noise = "A/A control: " + fmtRatio(ctl.PerSec/none.PerSec) + " req/s"
		if none.ServerCPU > 0 && ctl.ServerCPU > 0 {
			r.noise += ", " + fmtRatio(float64(ctl.ServerCPU)/float64(none.ServerCPU)) + " CPU per request"
		}
	}
	return r
}

// peerLabel names a Redis peer in the headline: the floor says what it is.
func peerLabel(p string) string {
	if p == plainLua {
		return "the plain-Lua floor"
	}
	return p
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
