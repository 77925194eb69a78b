package headers_test

import (
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
)

var testNow = time.Unix(1_700_000_000, 500_000_000)

func allowed(l sluice.Limit, remaining int64, resetAfter time.Duration) sluice.Result {
	return sluice.Result{Allowed: true, Limit: l, Remaining: remaining, ResetAfter: resetAfter}
}

func denied(l sluice.Limit, remaining int64, resetAfter, retryAfter time.Duration) sluice.Result {
	return sluice.Result{Limit: l, Remaining: remaining, ResetAfter: resetAfter, RetryAfter: retryAfter}
}

func one(name string, r sluice.Result) []headers.Policy {
	return []headers.Policy{{Name: name, Result: r}}
}

type writeCase struct {
	name     string
	mode     headers.Mode
	policies []headers.Policy
	binding  int
	// want maps field names, spelled as in the drafts, to their values.
	want map[string]string
}

// checkFields fails unless h holds exactly the fields of want, each with
// one line.
func checkFields(t *testing.T, h http.Header, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := h.Values(k); len(got) != 1 || got[0] != v {
			t.Errorf("%s = %q, want [%q]", k, got, v)
		}
	}
	if len(h) != len(want) {
		t.Errorf("header has %d fields, want %d: %v", len(h), len(want), h)
	}
	for k := range h {
		if k != http.CanonicalHeaderKey(k) {
			t.Errorf("field name %q is not canonical", k)
		}
	}
}

func runWriteCases(t *testing.T, cases []writeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			headers.Write(h, tc.mode, tc.policies, tc.binding, testNow)
			checkFields(t, h, tc.want)
		})
	}
}

func TestWriteIETF(t *testing.T) {
	perMin := sluice.PerMinute(100)
	runWriteCases(t, []writeCase{
		{
			name:     "allowed",
			mode:     headers.IETF,
			policies: one("default", allowed(perMin, 42, 34200*time.Millisecond)),
			want: map[string]string{
				"RateLimit-Policy": `"default";q=100;w=60`,
				"RateLimit":        `"default";r=42;t=35`,
			},
		},
		{
			name:     "allowed full bucket omits t",
			mode:     headers.IETF,
			policies: one("default", allowed(perMin, 100, 0)),
			want: map[string]string{
				"RateLimit-Policy": `"default";q=100;w=60`,
				"RateLimit":        `"default";r=100`,
			},
		},
		{
			name:     "allowed just under a second rounds up",
			mode:     headers.IETF,
			policies: one("default", allowed(perMin, 99, time.Nanosecond)),
			want: map[string]string{
				"RateLimit-Policy": `"default";q=100;w=60`,
				"RateLimit":        `"default";r=99;t=1`,
			},
		},
		{
			name:     "denied t is Retry-After",
			mode:     headers.IETF,
			policies: one("default", denied(perMin, 0, 59*time.Second, 11001*time.Millisecond)),
			want: map[string]string{
				"RateLimit-Policy": `"default";q=100;w=60`,
				"RateLimit":        `"default";r=0;t=12`,
			},
		},
		{
			name:     "denied with no wait still says 1",
			mode:     headers.IETF,
			policies: one("default", denied(perMin, 0, 0, 0)),
			want: map[string]string{
				"RateLimit-Policy": `"default";q=100;w=60`,
				"RateLimit":        `"default";r=0;t=1`,
			},
		},
		{
			name: "unsatisfiable t is the reset",
			mode: headers.IETF,
			policies: one("default", sluice.Result{
				Limit: perMin, Remaining: 3, ResetAfter: 58500 * time.Millisecond, Unsatisfiable: true,
			}),
			want: map[string]string{
				"RateLimit-Policy": `"default";q=100;w=60`,
				"RateLimit":        `"default";r=3;t=59`,
			},
		},
		{
			name: "multiple policies, second binding",
			mode: headers.IETF,
			policies: []headers.Policy{
				{Name: "burst", Result: allowed(sluice.PerSecond(10), 9, 100*time.Millisecond)},
				{Name: "hour", Result: denied(sluice.PerHour(1000), 0, time.Hour, 3*time.Second)},
				{Name: "day", Result: allowed(sluice.Per(5000, 24*time.Hour), 4000, 20*time.Hour)},
			},
			binding: 1,
			want: map[string]string{
				"RateLimit-Policy": `"burst";q=10;w=1, "hour";q=1000;w=3600, "day";q=5000;w=86400`,
				"RateLimit":        `"hour";r=0;t=3`,
			},
		},
		{
			name:     "burst above rate",
			mode:     headers.IETF,
			policies: one("api", allowed(perMin.WithBurst(200), 150, 30*time.Second)),
			want: map[string]string{
				"RateLimit-Policy": `"api";q=100;w=60;sluice-burst=200`,
				"RateLimit":        `"api";r=150;t=30`,
			},
		},
		{
			name:     "burst below rate",
			mode:     headers.IETF,
			policies: one("api", allowed(perMin.WithBurst(1), 1, 0)),
			want: map[string]string{
				"RateLimit-Policy": `"api";q=100;w=60;sluice-burst=1`,
				"RateLimit":        `"api";r=1`,
			},
		},
		{
			name:     "burst equal to rate",
			mode:     headers.IETF,
			policies: one("api", allowed(perMin.WithBurst(100), 1, time.Second)),
			want: map[string]string{
				"RateLimit-Policy": `"api";q=100;w=60`,
				"RateLimit":        `"api";r=1;t=1`,
			},
		},
		{
			name: "sub-second periods",
			mode: headers.IETF,
			policies: []headers.Policy{
				{Name: "a", Result: allowed(sluice.Per(10, 100*time.Millisecond), 3, 70*time.Millisecond)},
				{Name: "b", Result: allowed(sluice.Per(3, 1500*time.Millisecond), 2, 500*time.Millisecond)},
				{Name: "c", Result: allowed(sluice.Per(1, 7*time.Millisecond), 1, 0)},
			},
			want: map[string]string{
				"RateLimit-Policy": `"a";q=100;w=1, "b";q=6;w=3, "c";q=142;w=1`,
				"RateLimit":        `"a";r=3;t=1`,
			},
		},
		{
			name: "huge values clamped",
			mode: headers.IETF,
			policies: one("big", sluice.Result{
				Allowed:    true,
				Limit:      sluice.Limit{Rate: math.MaxInt64, Period: time.Nanosecond, Burst: math.MaxInt64 - 1},
				Remaining:  math.MaxInt64,
				ResetAfter: math.MaxInt64,
			}),
			want: map[string]string{
				"RateLimit-Policy": `"big";q=999999999999999;w=1;sluice-burst=999999999999999`,
				"RateLimit":        `"big";r=999999999999999;t=9223372037`,
			},
		},
		{
			name:     "negative values clamped",
			mode:     headers.IETF,
			policies: one("neg", allowed(sluice.Limit{Rate: -5, Period: -time.Second, Burst: -1}, -3, -time.Second)),
			want: map[string]string{
				"RateLimit-Policy": `"neg";q=0;w=1;sluice-burst=0`,
				"RateLimit":        `"neg";r=0`,
			},
		},
		{
			name:     "name escaped and sanitised",
			mode:     headers.IETF,
			policies: one("a\"b\\c\td\u00e9\xff", allowed(perMin, 1, time.Second)),
			want: map[string]string{
				"RateLimit-Policy": `"a\"b\\c?d??";q=100;w=60`,
				"RateLimit":        `"a\"b\\c?d??";r=1;t=1`,
			},
		},
		{
			name:     "long name truncated",
			mode:     headers.IETF,
			policies: one(strings.Repeat("n", 100), allowed(perMin, 1, time.Second)),
			want: map[string]string{
				"RateLimit-Policy": `"` + strings.Repeat("n", maxNameLen) + `";q=100;w=60`,
				"RateLimit":        `"` + strings.Repeat("n", maxNameLen) + `";r=1;t=1`,
			},
		},
		{
			name:     "empty name",
			mode:     headers.IETF,
			policies: one("", allowed(perMin, 1, time.Second)),
			want: map[string]string{
				"RateLimit-Policy": `"";q=100;w=60`,
				"RateLimit":        `"";r=1;t=1`,
			},
		},
	})
}

func TestWriteDraft06(t *testing.T) {
	perMin := sluice.PerMinute(100)
	runWriteCases(t, []writeCase{
		{
			name:     "allowed",
			mode:     headers.Draft06,
			policies: one("default", allowed(perMin, 42, 34200*time.Millisecond)),
			want: map[string]string{
				"RateLimit-Limit":     "100",
				"RateLimit-Remaining": "42",
				"RateLimit-Reset":     "35",
				"RateLimit-Policy":    "100;w=60",
			},
		},
		{
			name:     "full bucket resets in 0",
			mode:     headers.Draft06,
			policies: one("default", allowed(perMin, 100, 0)),
			want: map[string]string{
				"RateLimit-Limit":     "100",
				"RateLimit-Remaining": "100",
				"RateLimit-Reset":     "0",
				"RateLimit-Policy":    "100;w=60",
			},
		},
		{
			name: "denied, multiple policies, burst",
			mode: headers.Draft06,
			policies: []headers.Policy{
				{Name: "s", Result: allowed(sluice.Per(10, 100*time.Millisecond).WithBurst(20), 19, 10*time.Millisecond)},
				{Name: "m", Result: denied(perMin, 0, time.Minute, 1200*time.Millisecond)},
			},
			binding: 1,
			want: map[string]string{
				"RateLimit-Limit":     "100",
				"RateLimit-Remaining": "0",
				"RateLimit-Reset":     "2",
				"RateLimit-Policy":    "100;w=1;sluice-burst=20, 100;w=60",
			},
		},
		{
			name:     "with IETF the policy takes the IETF form",
			mode:     headers.Draft06 | headers.IETF,
			policies: one("default", denied(perMin, 0, time.Minute, 12*time.Second)),
			want: map[string]string{
				"RateLimit-Limit":     "100",
				"RateLimit-Remaining": "0",
				"RateLimit-Reset":     "12",
				"RateLimit-Policy":    `"default";q=100;w=60`,
				"RateLimit":           `"default";r=0;t=12`,
			},
		},
		{
			name:     "sub-second period uses q",
			mode:     headers.Draft06,
			policies: one("default", allowed(sluice.Per(3, 1500*time.Millisecond), 2, 500*time.Millisecond)),
			want: map[string]string{
				"RateLimit-Limit":     "6",
				"RateLimit-Remaining": "2",
				"RateLimit-Reset":     "1",
				"RateLimit-Policy":    "6;w=3",
			},
		},
		{
			name:     "huge values clamped",
			mode:     headers.Draft06,
			policies: one("big", allowed(sluice.Limit{Rate: math.MaxInt64, Period: time.Second}, math.MaxInt64, time.Second)),
			want: map[string]string{
				"RateLimit-Limit":     "999999999999999",
				"RateLimit-Remaining": "999999999999999",
				"RateLimit-Reset":     "1",
				"RateLimit-Policy":    "999999999999999;w=1",
			},
		},
	})
}

func TestWriteXRateLimit(t *testing.T) {
	perMin := sluice.PerMinute(100)
	runWriteCases(t, []writeCase{
		{
			// 1700000000.5 + 34.2 = 1700000034.7, rounded up.
			name:     "allowed",
			mode:     headers.XRateLimit,
			policies: one("default", allowed(perMin, 42, 34200*time.Millisecond)),
			want: map[string]string{
				"X-RateLimit-Limit":     "100",
				"X-RateLimit-Remaining": "42",
				"X-RateLimit-Reset":     "1700000035",
			},
		},
		{
			name:     "full bucket resets now, rounded up",
			mode:     headers.XRateLimit,
			policies: one("default", allowed(perMin, 100, 0)),
			want: map[string]string{
				"X-RateLimit-Limit":     "100",
				"X-RateLimit-Remaining": "100",
				"X-RateLimit-Reset":     "1700000001",
			},
		},
		{
			// Never earlier than the moment the request would pass:
			// 1700000000.5 + 0.7 = 1700000001.2.
			name:     "denied",
			mode:     headers.XRateLimit,
			policies: one("default", denied(perMin, -2, time.Minute, 700*time.Millisecond)),
			want: map[string]string{
				"X-RateLimit-Limit":     "100",
				"X-RateLimit-Remaining": "0",
				"X-RateLimit-Reset":     "1700000002",
			},
		},
		{
			name: "binding policy only",
			mode: headers.XRateLimit,
			policies: []headers.Policy{
				{Name: "a", Result: allowed(perMin, 50, time.Second)},
				{Name: "b", Result: allowed(sluice.PerHour(10), 1, 500*time.Millisecond)},
			},
			binding: 1,
			want: map[string]string{
				"X-RateLimit-Limit":     "10",
				"X-RateLimit-Remaining": "1",
				"X-RateLimit-Reset":     "1700000001",
			},
		},
	})
}

// The values the package documentation shows.
func TestWriteAllModes(t *testing.T) {
	runWriteCases(t, []writeCase{{
		name:     "every field",
		mode:     headers.IETF | headers.Draft06 | headers.XRateLimit,
		policies: one("default", allowed(sluice.PerMinute(100), 42, 34200*time.Millisecond)),
		want: map[string]string{
			"RateLimit-Policy":      `"default";q=100;w=60`,
			"RateLimit":             `"default";r=42;t=35`,
			"RateLimit-Limit":       "100",
			"RateLimit-Remaining":   "42",
			"RateLimit-Reset":       "35",
			"X-RateLimit-Limit":     "100",
			"X-RateLimit-Remaining": "42",
			"X-RateLimit-Reset":     "1700000035",
		},
	}})
}

func TestWriteNothing(t *testing.T) {
	p := one("default", allowed(sluice.PerMinute(100), 42, time.Second))
	runWriteCases(t, []writeCase{
		{name: "none", mode: headers.None, policies: p},
		{name: "unknown bits only", mode: 0x80, policies: p},
		{name: "no policies", mode: headers.IETF | headers.Draft06 | headers.XRateLimit},
		{name: "binding past the end", mode: headers.IETF, policies: p, binding: 1},
		{name: "negative binding", mode: headers.IETF, policies: p, binding: -1},
	})
}

// Write replaces its own fields and leaves every other field alone.
func TestWriteReplaces(t *testing.T) {
	h := http.Header{}
	h.Set("RateLimit", `"old";r=1`)
	h.Add("RateLimit-Policy", `"old";q=1;w=1`)
	h.Add("RateLimit-Policy", `"older";q=1;w=1`)
	h.Set("Content-Type", "text/plain")
	headers.Write(h, headers.IETF, one("new", allowed(sluice.PerSecond(5), 4, time.Second)), 0, testNow)
	checkFields(t, h, map[string]string{
		"RateLimit":        `"new";r=4;t=1`,
		"RateLimit-Policy": `"new";q=5;w=1`,
		"Content-Type":     "text/plain",
	})
}

// Fields share one backing array; adding a line to one must not change
// another.
func TestWriteValuesIndependent(t *testing.T) {
	h := http.Header{}
	headers.Write(h, headers.IETF|headers.XRateLimit, one("d", allowed(sluice.PerSecond(5), 4, time.Second)), 0, testNow)
	h.Add("RateLimit", `"extra";r=0`)
	h.Add("X-RateLimit-Limit", "7")
	want := map[string][]string{
		"RateLimit-Policy":      {`"d";q=5;w=1`},
		"RateLimit":             {`"d";r=4;t=1`, `"extra";r=0`},
		"X-RateLimit-Limit":     {"5", "7"},
		"X-RateLimit-Remaining": {"4"},
		"X-RateLimit-Reset":     {"1700000002"},
	}
	for k, v := range want {
		if got := h.Values(k); !slices.Equal(got, v) {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}
