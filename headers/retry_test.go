package headers_test

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
)

func TestRetryAfterSeconds(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int64
	}{
		{math.MinInt64, 1},
		{-time.Second, 1},
		{0, 1},
		{time.Nanosecond, 1},
		{time.Second, 1},
		{time.Second + time.Nanosecond, 2},
		{1500 * time.Millisecond, 2},
		{12 * time.Second, 12},
		{time.Hour, 3600},
		{math.MaxInt64, 9223372037},
	} {
		if got := headers.RetryAfterSeconds(tc.d); got != tc.want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
}

func TestSetRetryAfter(t *testing.T) {
	h := http.Header{}
	h.Add("Retry-After", "99")
	h.Add("Retry-After", "98")
	headers.SetRetryAfter(h, 2300*time.Millisecond)
	checkFields(t, h, map[string]string{"Retry-After": "3"})
}

// TestSetRetryAfterAgreesWithT: Retry-After, set for a denied result that
// can pass later, equals the t Write gives it.
func TestSetRetryAfterAgreesWithT(t *testing.T) {
	l := sluice.PerMinute(10)
	for _, tc := range []struct {
		name string
		r    sluice.Result
		want string // "" for none
	}{
		{"allowed", sluice.Result{Allowed: true, Limit: l, ResetAfter: time.Second}, ""},
		{"denied", sluice.Result{Limit: l, RetryAfter: 5100 * time.Millisecond}, "6"},
		{"denied without a wait", sluice.Result{Limit: l}, "1"},
		{"unsatisfiable", sluice.Result{Limit: l, ResetAfter: time.Minute, Unsatisfiable: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			want := map[string]string{}
			if tc.want != "" {
				headers.SetRetryAfter(h, tc.r.RetryAfter)
				want["Retry-After"] = tc.want
			}
			checkFields(t, h, want)

			// t in RateLimit never points later than Retry-After.
			headers.Write(h, headers.Draft06, one("p", tc.r), 0, testNow)
			if tc.want != "" && h.Get("RateLimit-Reset") != tc.want {
				t.Errorf("RateLimit-Reset = %q, Retry-After = %q", h.Get("RateLimit-Reset"), tc.want)
			}
		})
	}
}
