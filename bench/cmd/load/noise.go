package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/bench"
)

// A verdict is within a run's noise when the margin by which it was met or
// missed is no larger than the noise the run measured in itself: how far
// apart its A/A controls (two instances of one thing) landed, or, in
// process, whether the rounds of the two sides overlap. The verdict is
// still the target's; the headline adds the note, so a reader knows the
// run could not tell.

// redisNoise returns how far the A/A control landed from plain Lua at the
// headline concurrency, as fractions |control/plain − 1| of checks/s and
// of p99; ok is false when the run had no control.
func redisNoise(res *Results) (perSec, p99 float64, ok bool) {
	pl, ctl := redisRun(res.Redis, "plain-lua", 1, headlineConc), redisRun(res.Redis, bench.ControlPeer, 1, headlineConc)
	if pl == nil || ctl == nil {
		return 0, 0, false
	}
	return math.Abs(ctl.PerSec/pl.PerSec - 1), math.Abs(float64(ctl.P99)/float64(pl.P99) - 1), true
}

// within reports whether a and b are no further apart than noise, as a
// fraction of b.
func within(a, b, noise float64) bool { return math.Abs(a/b-1) <= noise }

// pct formats a fraction as a percentage.
func pct(f float64) string { return fmt.Sprintf("%.0f %%", 100*f) }

// httpNoise returns how far the A/A control server's p99 landed from the
// server without a limiter at rate; ok is false without a control.
func httpNoise(res *Results, rate int) (time.Duration, bool) {
	none, ctl := e2eRun(res, "none", "open", rate), e2eRun(res, e2eControl, "open", rate)
	if none == nil || ctl == nil {
		return 0, false
	}
	d := ctl.P99 - none.P99
	return max(d, -d), true
}

// overlap reports whether the rounds of a and b overlap: then the run
// cannot tell which is faster.
func overlap(a, b *InProcessResult) bool {
	if len(a.Samples) == 0 || len(b.Samples) == 0 {
		return false
	}
	return slices.Min(a.Samples) <= slices.Max(b.Samples) && slices.Min(b.Samples) <= slices.Max(a.Samples)
}

// verdictCell is the headline's verdict column for r: the verdict, and the
// noise note when there is one.
func verdictCell(r headlineRow) string {
	if r.noise == "" {
		return r.verdict
	}
	return r.verdict + " (within this run's noise: " + r.noise + ")"
}

// joinNotes joins noise notes.
func joinNotes(notes []string) string { return strings.Join(notes, "; ") }
