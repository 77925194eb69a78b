package main

import (
	"strings"
	"testing"
)

// TestChartsAreRatios checks that each chart is drawn as ratios to the
// reference its run measured, and in absolute figures when the run left
// that reference out.
func TestChartsAreRatios(t *testing.T) {
	res := fullRun()
	for name, want := range map[string]string{
		"redis.svg":     "checks/s ÷ the floor&#39;s",
		"inprocess.svg": "ns/op ÷ sluice&#39;s",
		"e2e.svg":       "p99 ÷ the server without a limiter&#39;s",
	} {
		if svg := string(writeCharts(res)[name]); !strings.Contains(svg, want) {
			t.Errorf("%s lacks %q", name, want)
		}
	}

	var redis []RedisRun
	for _, r := range res.Redis {
		if r.Peer != plainLua {
			redis = append(redis, r)
		}
	}
	var inproc []InProcessResult
	for _, r := range res.InProcess {
		if r.Peer != sluicePeer {
			inproc = append(inproc, r)
		}
	}
	var e2e []E2ERun
	for _, r := range res.E2E {
		if r.Server != "none" {
			e2e = append(e2e, r)
		}
	}
	res.Redis, res.InProcess, res.E2E = redis, inproc, e2e
	for name, want := range map[string]string{
		"redis.svg":     "checks/s",
		"inprocess.svg": "ns/op (lower is better)",
		"e2e.svg":       "requests/s",
	} {
		svg := string(writeCharts(res)[name])
		if !strings.Contains(svg, want) || strings.Contains(svg, "÷") {
			t.Errorf("%s without its reference: lacks %q or still draws ratios", name, want)
		}
	}
}

func TestE2EProblem(t *testing.T) {
	tests := []struct {
		run  E2ERun
		want string
	}{
		{E2ERun{Server: "redis", Mode: "open", Rate: 2000, StoreFailures: 3},
			"e2e redis, open loop at 2000 req/s: 3 requests the store did not decide within the budget"},
		{E2ERun{Server: "memstore", Mode: "closed", Errors: 1, FirstError: "EOF"},
			"e2e memstore, closed loop: 1 errors and 0 answers other than 200 (first: EOF)"},
	}
	for _, tt := range tests {
		if got := e2eProblem(tt.run); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}
