package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/bench"
)

// fullRun is a run of every phase with round figures, so each ratio in
// the headline is known in advance.
func fullRun() *Results {
	redis := func(peer string, conc int, perSec float64, p50, p99 time.Duration, cpu float64) RedisRun {
		return RedisRun{Peer: peer, Rules: 1, Concurrency: conc, PerSec: perSec, P50: p50, P99: p99, RedisCPU: cpu}
	}
	ms := time.Millisecond
	res := &Results{
		Machine:  Machine{Date: "2026-01-02T03:04:05Z", NumCPU: 2, LoadBefore: "1.50 1.00 0.50"},
		Settings: Settings{Rounds: 5, E2ERates: []int{2000}},
		Versions: map[string]string{"github.com/sluicehq/sluice": "abc1234"},
		Redis: []RedisRun{
			redis(sluicePeer, headlineConc, 100_000, ms, 2*ms, 8),
			redis(uncoalescedPeer, headlineConc, 50_000, ms, 4*ms, 12),
			redis("ulule", headlineConc, 50_000, ms, 4*ms, 8),
			redis("redis_rate", headlineConc, 40_000, ms, 5*ms, 20),
			redis(plainLua, headlineConc, 50_000, ms, 4*ms, 16),
			redis(bench.ControlPeer, headlineConc, 110_000, ms, 2500*time.Microsecond, 8),
			redis(sluicePeer, 1, 5_000, 100*time.Microsecond, ms, 50),
			redis("ulule", 1, 5_000, 80*time.Microsecond, ms, 40),
			redis(bench.ControlPeer, 1, 5_000, 110*time.Microsecond, ms, 50),
		},
		RedisHot: []RedisRun{
			redis(sluicePeer, 1, 4_000, 100*time.Microsecond, ms, 40),
			redis("ulule", 1, 5_000, 80*time.Microsecond, ms, 40),
			redis(bench.ControlPeer, 1, 4_400, 110*time.Microsecond, ms, 40),
		},
		MultiRule: []RedisRun{
			{Peer: sluicePeer, Rules: 1, Concurrency: 1, P50: 100 * time.Microsecond},
			{Peer: sluicePeer, Rules: 4, Concurrency: 1, P50: 125 * time.Microsecond},
			{Peer: "ulule", Rules: 1, Concurrency: 1, P50: 100 * time.Microsecond},
			{Peer: "ulule", Rules: 4, Concurrency: 1, P50: 400 * time.Microsecond, Stacked: true},
		},
		Race: []RaceRow{{Peer: sluicePeer}, {Peer: "httprate-redis"}, {Peer: "throttled"}},
		E2E: []E2ERun{
			{Server: "none", Mode: "open", Rate: 2000, P99: ms},
			{Server: "memstore", Mode: "open", Rate: 2000, P99: 1500 * time.Microsecond},
			{Server: "redis", Mode: "open", Rate: 2000, P99: 2 * ms},
			{Server: e2eFloor, Mode: "open", Rate: 2000, P99: 4 * ms},
			{Server: e2eControl, Mode: "open", Rate: 2000, P99: 900 * time.Microsecond},
			{Server: "none", Mode: "closed", PerSec: 40_000, ServerCPU: 20 * time.Microsecond},
			{Server: "redis", Mode: "closed", PerSec: 20_000, ServerCPU: 44 * time.Microsecond},
			{Server: e2eFloor, Mode: "closed", PerSec: 20_000, ServerCPU: 40 * time.Microsecond},
			{Server: e2eControl, Mode: "closed", PerSec: 44_000, ServerCPU: 20 * time.Microsecond},
		},
	}
	for i, admitted := range []int64{100, 102, 100} {
		res.Race[i].Instances, res.Race[i].Limit, res.Race[i].Admitted = 4, 100, admitted
	}
	res.Race[2].Errors = 61
	for _, m := range inprocModes {
		res.InProcess = append(res.InProcess,
			InProcessResult{Peer: sluicePeer, Mode: m, NsPerOp: 50, Samples: []float64{45, 50, 55}},
			InProcessResult{Peer: "x-time-rate", Mode: m, NsPerOp: 100, Samples: []float64{90, 100, 110}},
			InProcessResult{Peer: "go-limiter", Mode: m, NsPerOp: 54, Samples: []float64{52, 54, 58}})
	}
	return res
}

// TestHeadlineRows checks every row of a full run: its ratios, and the
// noise the run measured for them.
func TestHeadlineRows(t *testing.T) {
	res := fullRun()
	res.Settings.Keys = 10_000
	tests := []struct {
		row           func(*Results) headlineRow
		figure, noise []string
	}{
		{inProcessRow,
			[]string{"sluice 50 / 50 / 50 ns, 0 allocs", "x-time-rate 2.00× / 2.00× / 2.00×", "go-limiter 1.08× / 1.08× / 1.08×"},
			[]string{"median of 5 rounds", "go-limiter sequential", "go-limiter parallel-hot-key"}},
		{versusRow,
			[]string{"10000 keys: checks/s 1: 1.00×, 64: 2.00×", "Redis / client CPU 1: 1.25× / –, 64: 1.00× / –",
				"one hot key: checks/s 1: 0.80×"},
			[]string{"10000 keys: 1: 1.00×, 64: 1.10×; one hot key: 1: 1.10×"}},
		{func(r *Results) headlineRow { return redisRow(r, sluicePeer, "as set up") },
			[]string{"ulule 2.00× (0.50×)", "redis_rate 2.50× (0.40×)", "the plain-Lua floor 2.00× (0.50×)", "100.0k checks/s"},
			[]string{"1.10× checks/s (1.25× p99)"}},
		{func(r *Results) headlineRow { return redisRow(r, uncoalescedPeer, "one call") },
			[]string{"ulule 1.00× (1.00×)", "redis_rate 1.25× (0.80×)", "the plain-Lua floor 1.00× (1.00×)"},
			[]string{"1.10× checks/s"}},
		{redisCPURow,
			[]string{"sluice 0.50×", "sluice (one call per check) 0.75×", "ulule 0.50×", "redis_rate 1.25×", "(the floor: 16.0 µs)"},
			[]string{"A/A control: 1.00×"}},
		{multiRuleRow, []string{"sluice 1.25×; ulule 4.00×"}, []string{"A/A control at one goroutine: 1.10× p50"}},
		{raceRow, []string{"sluice 100, httprate-redis 102, throttled 100 (61 checks failed)"}, []string{"exact count"}},
		{func(r *Results) headlineRow { return httpOpenRow(r, 2000) },
			[]string{"memstore 1.50×", "redis 2.00×", "the floor (one plain-Lua EVALSHA per request) 4.00×", "redis ÷ the floor 0.50×"},
			[]string{"A/A control (a second server without a limiter): 0.90×"}},
		{httpClosedRow,
			[]string{"redis 0.50×", "the floor 0.50×", "CPU per request: redis 1.10×"},
			[]string{"A/A control: 1.10× req/s, 1.00× CPU per request"}},
	}
	for _, tt := range tests {
		r := tt.row(res)
		for _, want := range tt.figure {
			if !strings.Contains(r.figure, want) {
				t.Errorf("%s: figure %q lacks %q", r.what, r.figure, want)
			}
		}
		for _, want := range tt.noise {
			if !strings.Contains(r.noise, want) {
				t.Errorf("%s: noise %q lacks %q", r.what, r.noise, want)
			}
		}
	}
	if r := inProcessRow(res); strings.Contains(r.noise, "x-time-rate") {
		t.Errorf("rounds apart reported as overlapping: %q", r.noise)
	}
}

// TestHeadlineWithoutPhases checks that a run without a phase says so in
// that phase's rows, and that a run without A/A controls claims no noise
// figure.
func TestHeadlineWithoutPhases(t *testing.T) {
	for _, r := range headlineRows(&Results{Settings: Settings{E2ERates: []int{2000}}}) {
		if r.figure != notMeasured {
			t.Errorf("%s: %q in a run that measured nothing", r.what, r.figure)
		}
	}
	res := fullRun()
	var redis []RedisRun
	for _, r := range res.Redis {
		if r.Peer != bench.ControlPeer {
			redis = append(redis, r)
		}
	}
	res.Redis = redis
	for _, r := range []headlineRow{redisRow(res, sluicePeer, "x"), redisCPURow(res), multiRuleRow(res)} {
		if strings.Contains(r.noise, "control") {
			t.Errorf("%s: a run without the control reports it: %q", r.what, r.noise)
		}
	}
}

// processWords are words about how the product was made, or about
// internal targets, that the headline must not print.
var processWords = regexp.MustCompile(`(?i)\b(issue|session|target|verdict|met|not met)\b`)

// TestHeadlineSpeaksOfTheRun checks that the headline reports ratios and
// noise, never a verdict against a target, for a full run and for the
// published one.
func TestHeadlineSpeaksOfTheRun(t *testing.T) {
	h := renderHeadline(fullRun())
	if w := processWords.FindString(h); w != "" {
		t.Errorf("headline says %q:\n%s", w, h)
	}
	for _, want := range []string{"2026-01-02T03:04:05Z", "sluice abc1234", "load average 1.50 1.00 0.50", "| what | this run | noise in this run |"} {
		if !strings.Contains(h, want) {
			t.Errorf("headline lacks %q:\n%s", want, h)
		}
	}
}

func TestOverlap(t *testing.T) {
	r := func(xs ...float64) *InProcessResult { return &InProcessResult{Samples: xs} }
	tests := []struct {
		a, b *InProcessResult
		want bool
	}{
		{r(1, 2, 3), r(3, 4), true},
		{r(1, 2), r(2.5, 4), false},
		{r(5, 9), r(6, 7), true},
		{r(), r(1), false},
	}
	for _, tt := range tests {
		if got := overlap(tt.a, tt.b); got != tt.want || overlap(tt.b, tt.a) != tt.want {
			t.Errorf("overlap(%v, %v) = %v, want %v", tt.a.Samples, tt.b.Samples, got, tt.want)
		}
	}
}
