package main

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// sluice against ulule, the cheapest one-round-trip peer: per key shape
// and concurrency, each figure of sluice ÷ ulule's, beside the A/A
// control's (a second sluice ÷ the first) for the same figure.

// keyShape is one phase's runs: over the run's keys, or on one hot key.
type keyShape struct {
	name string
	runs []RedisRun
}

func keyShapes(res *Results) []keyShape {
	var out []keyShape
	if len(res.Redis) > 0 {
		out = append(out, keyShape{fmt.Sprintf("%d keys", res.Settings.Keys), res.Redis})
	}
	if len(res.RedisHot) > 0 {
		out = append(out, keyShape{"one hot key", res.RedisHot})
	}
	return out
}

// versusFigures are sluice's figures ÷ ulule's at one concurrency.
type versusFigures struct {
	perSec, redisCPU, clientCPU, p50 float64
}

func versus(runs []RedisRun, conc int) (sluice, ulule *RedisRun, v versusFigures, ok bool) {
	s, u := redisRun(runs, sluicePeer, 1, conc), redisRun(runs, versusPeer, 1, conc)
	if s == nil || u == nil {
		return nil, nil, v, false
	}
	return s, u, versusFigures{
		perSec:    div(s.PerSec, u.PerSec),
		redisCPU:  div(s.RedisCPU, u.RedisCPU),
		clientCPU: div(s.ClientCPU, u.ClientCPU),
		p50:       div(float64(s.P50), float64(u.P50)),
	}, true
}

// div is a ÷ b, NaN when either is missing.
func div(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return math.NaN()
	}
	return a / b
}

func renderVersus(b *strings.Builder, res *Results) {
	t := table{b}
	b.WriteString("### sluice against ulule/limiter, per check\n\n")
	fmt.Fprintf(b, "sluice as the README sets it up (its own client from `redisstore.NewClient`, zero `Config` but the "+
		"Secret: coalescing on) ÷ ulule/limiter's Redis store, the cheapest one-round-trip peer, on one Redis, every "+
		"figure per check; the A/A control is a second sluice instance ÷ the first, measured in the same interleaved "+
		"rounds: a ratio of sluice ÷ ulule within the control's distance of 1× is a tie. Redis CPU is the server's main "+
		"thread (`INFO cpu`), client CPU this process's (getrusage), each over the checks of the slices measured.\n\n")
	t.head("keys", "goroutines", "checks/s ÷ ulule", "Redis CPU ÷ ulule", "client CPU ÷ ulule", "p50 ÷ ulule",
		"sluice: Redis / client CPU µs, script calls", "ulule: Redis / client CPU µs", "A/A: checks/s, Redis CPU, client CPU, p50")
	for _, ks := range keyShapes(res) {
		for _, c := range concurrencies(ks.runs) {
			s, u, v, ok := versus(ks.runs, c)
			if !ok {
				continue
			}
			aa := "–"
			if x, ok := redisControl(ks.runs, c); ok {
				aa = strings.Join([]string{fmtRatio(x.perSec), fmtRatio(x.cpu), fmtRatio(x.client), fmtRatio(x.p50)}, ", ")
			}
			t.row(ks.name, fmt.Sprint(c), fmtRatio(v.perSec), fmtRatio(v.redisCPU), fmtRatio(v.clientCPU), fmtRatio(v.p50),
				fmt.Sprintf("%.1f / %.1f, %.2f", s.RedisCPU, s.ClientCPU, s.RoundTrips),
				fmt.Sprintf("%.1f / %.1f", u.RedisCPU, u.ClientCPU), aa)
		}
	}
	b.WriteString("\n")
}

// versusRow is the headline's sluice ÷ ulule: checks/s at every
// concurrency and Redis CPU per check at the middle one, for each key
// shape.
func versusRow(res *Results) headlineRow {
	r := headlineRow{what: "Redis, one rule: sluice as the README sets it up ÷ ulule/limiter, checks/s by goroutines; " +
		"Redis and client CPU per check", figure: notMeasured, noise: "–"}
	var figs, noise []string
	for _, ks := range keyShapes(res) {
		var rates, cpus, aa []string
		for _, c := range concurrencies(ks.runs) {
			_, _, v, ok := versus(ks.runs, c)
			if !ok {
				continue
			}
			rates = append(rates, fmt.Sprintf("%d: %s", c, fmtRatio(v.perSec)))
			cpus = append(cpus, fmt.Sprintf("%d: %s / %s", c, fmtRatio(v.redisCPU), fmtRatio(v.clientCPU)))
			if x, ok := redisControl(ks.runs, c); ok {
				aa = append(aa, fmt.Sprintf("%d: %s", c, fmtRatio(x.perSec)))
			}
		}
		if len(rates) == 0 {
			continue
		}
		figs = append(figs, fmt.Sprintf("%s: checks/s %s; Redis / client CPU %s", ks.name, strings.Join(rates, ", "),
			strings.Join(cpus, ", ")))
		if len(aa) > 0 {
			noise = append(noise, ks.name+": "+strings.Join(aa, ", "))
		}
	}
	if len(figs) > 0 {
		r.figure = strings.Join(figs, "; ")
	}
	if len(noise) > 0 {
		r.noise = "A/A control (a second sluice ÷ the first), checks/s: " + strings.Join(noise, "; ")
	}
	return r
}

// versusSummary is the line the tool logs at the end of the Redis phases.
func versusSummary(res *Results) string {
	var lines []string
	for _, ks := range keyShapes(res) {
		for _, c := range concurrencies(ks.runs) {
			s, _, v, ok := versus(ks.runs, c)
			if !ok {
				continue
			}
			line := fmt.Sprintf("%-12s %3d gor.: sluice ÷ ulule checks/s %s, Redis CPU %s, client CPU %s, p50 %s (sluice p50 %v, %.2f calls/check)",
				ks.name, c, fmtRatio(v.perSec), fmtRatio(v.redisCPU), fmtRatio(v.clientCPU), fmtRatio(v.p50),
				s.P50.Round(time.Microsecond), s.RoundTrips)
			if x, ok := redisControl(ks.runs, c); ok {
				line += fmt.Sprintf("; A/A %s, %s, %s, %s", fmtRatio(x.perSec), fmtRatio(x.cpu), fmtRatio(x.client), fmtRatio(x.p50))
			}
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "\n")
}
