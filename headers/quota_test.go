package headers_test

import (
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
)

func TestQuota(t *testing.T) {
	for _, tc := range []struct {
		l    sluice.Limit
		q, w int64
	}{
		// Whole seconds: the limit as declared.
		{sluice.PerSecond(10), 10, 1},
		{sluice.PerMinute(100), 100, 60},
		{sluice.PerHour(1000), 1000, 3600},
		{sluice.Per(5000, 24*time.Hour), 5000, 86400},
		{sluice.Per(7, 90*time.Second), 7, 90},
		// Burst does not change q.
		{sluice.PerMinute(100).WithBurst(200), 100, 60},
		// Exact rescaling: at most ten periods.
		{sluice.Per(10, 100*time.Millisecond), 100, 1},
		{sluice.Per(3, 1500*time.Millisecond), 6, 3},
		{sluice.Per(2, 400*time.Millisecond), 10, 2},
		{sluice.Per(1, 300*time.Millisecond), 10, 3},
		{sluice.Per(5, 1250*time.Millisecond), 20, 5},
		{sluice.Per(1, 61500*time.Millisecond), 2, 123},
		// Fallback: w rounded up, q rounded down.
		{sluice.Per(1, 7*time.Millisecond), 142, 1},
		{sluice.Per(1, 333*time.Millisecond), 3, 1},
		{sluice.Per(10, 1001*time.Millisecond), 19, 2},
		{sluice.Per(1, 150*time.Millisecond), 6, 1},
		{sluice.Per(1, time.Millisecond), 1000, 1},
		{sluice.Per(1, time.Microsecond), 1_000_000, 1},
		{sluice.Per(1, time.Nanosecond), 1_000_000_000, 1},
		{sluice.Per(1, 1234567*time.Microsecond), 1, 2},
		// Invalid limits still give valid syntax.
		{sluice.Limit{}, 0, 1},
		{sluice.Limit{Rate: -3, Period: time.Second}, 0, 1},
		{sluice.Limit{Rate: 3, Period: -time.Second}, 3, 1},
		{sluice.Limit{Rate: 3}, 3, 1},
		// Clamping.
		{sluice.Limit{Rate: math.MaxInt64, Period: time.Second}, maxInteger, 1},
		{sluice.Limit{Rate: math.MaxInt64, Period: 100 * time.Millisecond}, maxInteger, 1},
		{sluice.Limit{Rate: math.MaxInt64, Period: 7 * time.Millisecond}, maxInteger, 1},
		{sluice.Limit{Rate: math.MaxInt64, Period: math.MaxInt64}, maxInteger, 9223372037},
		{sluice.Limit{Rate: 1, Period: math.MaxInt64}, 1, 9223372037},
		{sluice.Limit{Rate: maxInteger, Period: 500 * time.Millisecond}, maxInteger, 1},
	} {
		q, w := headers.Quota(tc.l)
		if q != tc.q || w != tc.w {
			t.Errorf("Quota(%+v) = q=%d;w=%d, want q=%d;w=%d", tc.l, q, w, tc.q, tc.w)
		}
	}
}

// q/w never states a faster sustained rate than the limit's, and when the
// window is within ten periods it states exactly that rate.
func TestQuotaNeverOverstates(t *testing.T) {
	for rate := int64(1); rate <= 50; rate++ {
		for p := time.Millisecond; p <= 5*time.Second; p += 37 * time.Millisecond {
			l := sluice.Per(rate, p)
			q, w := headers.Quota(l)
			if w < 1 || q < 0 {
				t.Fatalf("Quota(%v) = q=%d;w=%d", l, q, w)
			}
			// q/w ≤ rate/p  ⇔  q·p ≤ rate·w·1s (all small enough for int64).
			lhs, rhs := q*int64(p), rate*w*int64(time.Second)
			if lhs > rhs {
				t.Errorf("Quota(%v) = q=%d;w=%d overstates the rate", l, q, w)
			}
			if w*int64(time.Second) <= 10*int64(p) && w*int64(time.Second)%int64(p) == 0 && lhs != rhs {
				t.Errorf("Quota(%v) = q=%d;w=%d is not exact", l, q, w)
			}
		}
	}
}
