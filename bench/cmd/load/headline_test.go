package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/bench"
)

// TestHeadlineVerdicts checks each target's verdict on either side of its
// threshold, and that a phase not run is not called met.
func TestHeadlineVerdicts(t *testing.T) {
	exactRace := RaceRow{Peer: sluicePeer}
	exactRace.Limit, exactRace.Admitted, exactRace.Attempts = 100, 100, 1000
	redis := func(coalesced, redisRate, ulule, plain float64, p99 time.Duration) []RedisRun {
		return []RedisRun{
			{Peer: coalescedPeer, Rules: 1, Concurrency: headlineConc, PerSec: coalesced, P99: p99},
			{Peer: sluicePeer, Rules: 1, Concurrency: headlineConc, PerSec: coalesced / 2, P99: p99},
			{Peer: "redis_rate", Rules: 1, Concurrency: headlineConc, PerSec: redisRate, P99: 3 * time.Millisecond},
			{Peer: "ulule", Rules: 1, Concurrency: headlineConc, PerSec: ulule, P99: 3 * time.Millisecond},
			{Peer: "plain-lua", Rules: 1, Concurrency: headlineConc, PerSec: plain, P99: 3 * time.Millisecond},
		}
	}
	inproc := func(sluiceNs, peerNs float64, allocs int64) []InProcessResult {
		var out []InProcessResult
		for _, m := range inprocModes {
			out = append(out, InProcessResult{Peer: sluicePeer, Mode: m, NsPerOp: sluiceNs, AllocsPerOp: allocs},
				InProcessResult{Peer: "x-time-rate", Mode: m, NsPerOp: peerNs})
		}
		return out
	}
	e2e := func(none, redis time.Duration) []E2ERun {
		return []E2ERun{{Server: "none", Mode: "open", Rate: headlineRate, P99: none},
			{Server: "redis", Mode: "open", Rate: headlineRate, P99: redis}}
	}
	tests := []struct {
		name string
		res  Results
		row  func(*Results) headlineRow
		want string
	}{
		{"coalesced at 1.6×", Results{Redis: redis(160, 100, 150, 0, time.Millisecond)}, coalescedThroughput, met},
		{"coalesced at 1.4×", Results{Redis: redis(140, 100, 100, 0, time.Millisecond)}, coalescedThroughput, notMet},
		{"coalesced behind ulule", Results{Redis: redis(160, 100, 170, 0, time.Millisecond)}, coalescedThroughput, notMet},
		{"coalesced with a worse p99", Results{Redis: redis(160, 100, 150, 0, 4*time.Millisecond)}, coalescedThroughput, notMet},
		{"coalesced not run", Results{}, coalescedThroughput, notMeasured},
		{"uncoalesced ahead of plain Lua", Results{Redis: redis(200, 100, 100, 99, 0)}, uncoalescedThroughput, met},
		{"uncoalesced behind plain Lua", Results{Redis: redis(200, 100, 100, 101, 0)}, uncoalescedThroughput, notMet},
		{"memstore fast", Results{InProcess: inproc(99, 120, 0)}, memstoreSpeed, met},
		{"memstore slow", Results{InProcess: inproc(101, 120, 0)}, memstoreSpeed, notMet},
		{"memstore allocates", Results{InProcess: inproc(50, 120, 1)}, memstoreSpeed, notMet},
		{"memstore ahead", Results{InProcess: inproc(50, 51, 0)}, memstoreLead, met},
		{"memstore behind", Results{InProcess: inproc(50, 50, 0)}, memstoreLead, notMet},
		{"memstore not run", Results{}, memstoreLead, notMeasured},
		{"race exact", Results{Race: []RaceRow{exactRace}}, raceRow, met},
		{"http, memstore only", Results{E2E: []E2ERun{{Server: "none", Mode: "open", Rate: headlineRate, P99: time.Millisecond},
			{Server: "memstore", Mode: "open", Rate: headlineRate, P99: time.Millisecond}}},
			func(r *Results) headlineRow { return httpAdded(r, headlineRate, "t") }, notMeasured},
		{"http under 1 ms", Results{E2E: e2e(time.Millisecond, 1900*time.Microsecond)},
			func(r *Results) headlineRow { return httpAdded(r, headlineRate, "t") }, met},
		{"http over 1 ms", Results{E2E: e2e(time.Millisecond, 2*time.Millisecond)},
			func(r *Results) headlineRow { return httpAdded(r, headlineRate, "t") }, notMet},
		{"http, only the coalescing variant under 1 ms", Results{E2E: append(e2e(time.Millisecond, 2*time.Millisecond),
			E2ERun{Server: "redis-coalesced", Mode: "open", Rate: headlineRate, P99: 1500 * time.Microsecond})},
			func(r *Results) headlineRow { return httpAdded(r, headlineRate, "t") }, notMet},
		{"http not run", Results{}, func(r *Results) headlineRow { return httpAdded(r, headlineRate, "t") }, notMeasured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.row(&tt.res); got.verdict != tt.want {
				t.Errorf("verdict %q, want %q (row %+v)", got.verdict, tt.want, got)
			}
		})
	}
	race := Results{Race: []RaceRow{exactRace}}
	race.Race[0].Admitted = 101
	if got := raceRow(&race).verdict; got != notMet {
		t.Errorf("a sluice variant over-admitting: verdict %q, want %q", got, notMet)
	}
	if h := renderHeadline(&Results{}); strings.Contains(h, "| "+met+" |") {
		t.Errorf("a run with no phases meets a target:\n%s", h)
	}
}

// TestUncoalescedRowShowsTheControl checks that the A/A control's ratio to
// plain Lua is shown beside the uncoalesced figure, and that the verdict
// is still judged against plain Lua alone.
func TestUncoalescedRowShowsTheControl(t *testing.T) {
	runs := func(control float64) []RedisRun {
		rs := []RedisRun{
			{Peer: sluicePeer, Rules: 1, Concurrency: headlineConc, PerSec: 98},
			{Peer: "redis_rate", Rules: 1, Concurrency: headlineConc, PerSec: 80},
			{Peer: "plain-lua", Rules: 1, Concurrency: headlineConc, PerSec: 100},
		}
		if control > 0 {
			rs = append(rs, RedisRun{Peer: bench.ControlPeer, Rules: 1, Concurrency: headlineConc, PerSec: control})
		}
		return rs
	}
	r := uncoalescedThroughput(&Results{Redis: runs(95)})
	if !strings.Contains(r.figure, "A/A control: a second plain-Lua instance made 0.95× the first's") {
		t.Errorf("figure without the control's ratio: %s", r.figure)
	}
	if r.verdict != notMet {
		t.Errorf("verdict %q at 0.98× plain Lua, want %q: the control must not move it", r.verdict, notMet)
	}
	if r := uncoalescedThroughput(&Results{Redis: runs(0)}); strings.Contains(r.figure, "control") {
		t.Errorf("a run without the control mentions it: %s", r.figure)
	}
}

// TestHTTPRowShowsItsReferences checks that the HTTP row shows what each
// reference server added to the server without a limiter (the A/A control;
// the floor, one plain-Lua EVALSHA per request, with its p99 inside its
// middleware), only when it ran, and that neither moves the verdict, which
// is the default Redis store's alone.
func TestHTTPRowShowsItsReferences(t *testing.T) {
	tests := []struct {
		name    string
		redis   time.Duration // the default store's p99; the server alone has 1 ms
		ref     E2ERun
		want    string // in the figure
		word    string // absent from the figure without ref
		verdict string
	}{
		{"A/A control", 2100 * time.Microsecond,
			E2ERun{Server: e2eControl, P99: 1200 * time.Microsecond},
			"A/A control, a second server without a limiter: +200 µs", "control", notMet},
		{"floor", 1500 * time.Microsecond,
			E2ERun{Server: e2eFloor, P99: 4 * time.Millisecond, MiddlewareP99: 2 * time.Millisecond},
			"the floor, one plain-Lua EVALSHA per request: +3.00 ms (2.00 ms)", "floor", met},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.ref.Mode, tt.ref.Rate = "open", headlineRate
			runs := []E2ERun{
				{Server: "none", Mode: "open", Rate: headlineRate, P99: time.Millisecond},
				{Server: "redis", Mode: "open", Rate: headlineRate, P99: tt.redis},
				tt.ref,
			}
			r := httpAdded(&Results{E2E: runs}, headlineRate, "t")
			if !strings.Contains(r.figure, tt.want) {
				t.Errorf("figure without %q: %s", tt.want, r.figure)
			}
			if r.verdict != tt.verdict {
				t.Errorf("verdict %q with the default store adding %v, want %q: the reference must not move it",
					r.verdict, tt.redis-time.Millisecond, tt.verdict)
			}
			if r := httpAdded(&Results{E2E: runs[:2]}, headlineRate, "t"); strings.Contains(r.figure, tt.word) {
				t.Errorf("a run without it mentions %q: %s", tt.word, r.figure)
			}
		})
	}
}

// TestNoiseNotes checks when a verdict is marked as within the run's own
// noise, and that the mark never changes the verdict.
func TestNoiseNotes(t *testing.T) {
	redis := func(own, coalesced, plain, control float64) []RedisRun {
		run := func(peer string, perSec float64) RedisRun {
			return RedisRun{Peer: peer, Rules: 1, Concurrency: headlineConc, PerSec: perSec, P99: 2 * time.Millisecond}
		}
		rs := []RedisRun{run(sluicePeer, own), run(coalescedPeer, coalesced), run("plain-lua", plain),
			run("redis_rate", 100), run("ulule", 100)}
		rs[1].P99 = time.Millisecond // the coalescer's p99 is well ahead
		if control > 0 {
			rs = append(rs, run(bench.ControlPeer, control))
		}
		return rs
	}
	e2e := func(redis, control time.Duration) []E2ERun {
		return []E2ERun{{Server: "none", Mode: "open", Rate: headlineRate, P99: time.Millisecond},
			{Server: "redis", Mode: "open", Rate: headlineRate, P99: redis},
			{Server: e2eControl, Mode: "open", Rate: headlineRate, P99: control}}
	}
	inproc := func(own, peer []float64) []InProcessResult {
		var out []InProcessResult
		for _, m := range inprocModes {
			out = append(out, InProcessResult{Peer: sluicePeer, Mode: m, NsPerOp: own[len(own)/2], Samples: own},
				InProcessResult{Peer: "go-limiter", Mode: m, NsPerOp: peer[len(peer)/2], Samples: peer})
		}
		return out
	}
	http := func(r *Results) headlineRow { return httpAdded(r, headlineRate, "t") }
	tests := []struct {
		name    string
		res     Results
		row     func(*Results) headlineRow
		verdict string
		noisy   bool
	}{
		{"uncoalesced 2 % behind, control 5 % off", Results{Redis: redis(98, 200, 100, 105)}, uncoalescedThroughput, notMet, true},
		{"uncoalesced 2 % ahead, control 5 % off", Results{Redis: redis(102, 200, 100, 95)}, uncoalescedThroughput, met, true},
		{"uncoalesced 10 % behind, control 5 % off", Results{Redis: redis(90, 200, 100, 105)}, uncoalescedThroughput, notMet, false},
		{"uncoalesced without a control", Results{Redis: redis(98, 200, 100, 0)}, uncoalescedThroughput, notMet, false},
		{"coalesced 1.55× redis_rate, control 5 % off", Results{Redis: redis(100, 155, 100, 105)}, coalescedThroughput, met, true},
		{"coalesced 2× redis_rate, control 5 % off", Results{Redis: redis(100, 200, 100, 105)}, coalescedThroughput, met, false},
		{"http 100 µs under, control 300 µs off", Results{E2E: e2e(1900*time.Microsecond, 1300*time.Microsecond)}, http, met, true},
		{"http 100 µs over, control 300 µs off", Results{E2E: e2e(2100*time.Microsecond, 700*time.Microsecond)}, http, notMet, true},
		{"http 500 µs under, control 100 µs off", Results{E2E: e2e(1500*time.Microsecond, 1100*time.Microsecond)}, http, met, false},
		{"memstore behind, rounds overlap", Results{InProcess: inproc([]float64{80, 95, 99}, []float64{85, 93, 97})}, memstoreLead, notMet, true},
		{"memstore behind, rounds apart", Results{InProcess: inproc([]float64{90, 95, 99}, []float64{70, 75, 80})}, memstoreLead, notMet, false},
		{"memstore ahead, rounds overlap", Results{InProcess: inproc([]float64{70, 80, 90}, []float64{85, 88, 95})}, memstoreLead, met, true},
		{"memstore ahead, rounds apart", Results{InProcess: inproc([]float64{60, 65, 70}, []float64{80, 85, 90})}, memstoreLead, met, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.row(&tt.res)
			if r.verdict != tt.verdict || (r.noise != "") != tt.noisy {
				t.Errorf("verdict %q, noise %q; want %q, noisy %v", r.verdict, r.noise, tt.verdict, tt.noisy)
			}
			if cell := verdictCell(r); !strings.HasPrefix(cell, tt.verdict) || strings.Contains(cell, "noise") != tt.noisy {
				t.Errorf("verdict cell %q", cell)
			}
		})
	}
}
