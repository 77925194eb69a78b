package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/bench"
)

// Each run measures its own noise. Against Redis and over HTTP it runs A/A
// controls in the same interleaved rounds as everything else: a second
// instance of sluice as the README sets it up ([bench.ControlPeer]) and a second
// server without a limiter (e2eControl). Identical twins should tie; how far
// apart they land is the smallest difference that run can resolve. In
// process, each figure is the median of several rounds, and two peers whose
// rounds overlap cannot be told apart by that run.

// controlRatios are the Redis A/A control's figures ÷ sluice's at one
// concurrency (0 where a figure is missing).
type controlRatios struct {
	perSec, p50, p99, cpu, client float64
}

// redisControl returns the Redis A/A control's ratios among runs at conc
// goroutines; ok is false when the run had no control there.
func redisControl(runs []RedisRun, conc int) (c controlRatios, ok bool) {
	pl, ctl := redisRun(runs, sluicePeer, 1, conc), redisRun(runs, bench.ControlPeer, 1, conc)
	if pl == nil || ctl == nil || pl.PerSec <= 0 {
		return c, false
	}
	c.perSec = ctl.PerSec / pl.PerSec
	if pl.P50 > 0 {
		c.p50 = float64(ctl.P50) / float64(pl.P50)
	}
	if pl.P99 > 0 {
		c.p99 = float64(ctl.P99) / float64(pl.P99)
	}
	if pl.RedisCPU > 0 {
		c.cpu = ctl.RedisCPU / pl.RedisCPU
	}
	if pl.ClientCPU > 0 {
		c.client = ctl.ClientCPU / pl.ClientCPU
	}
	return c, true
}

// overlap reports whether the rounds of a and b overlap: then the run
// cannot tell which is faster.
func overlap(a, b *InProcessResult) bool {
	if len(a.Samples) == 0 || len(b.Samples) == 0 {
		return false
	}
	return slices.Min(a.Samples) <= slices.Max(b.Samples) && slices.Min(b.Samples) <= slices.Max(a.Samples)
}

// roundsNoise describes the in-process noise: how many rounds each median
// comes from, and which comparisons (peer and mode) had overlapping rounds.
func roundsNoise(res *Results, overlapping []string) string {
	s := fmt.Sprintf("median of %d rounds; ", res.Settings.Rounds)
	if len(overlapping) == 0 {
		return s + "no peer's rounds overlap sluice's"
	}
	return s + "rounds overlap sluice's for " + strings.Join(overlapping, ", ")
}
