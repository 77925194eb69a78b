package headers

import (
	"math/bits"
	"time"

	"github.com/sluicehq/sluice"
)

// maxInteger is the largest Integer a Structured Field can carry (RFC 9651
// §3.3.1: at most 15 digits). Every number this package writes, in every
// mode, is clamped to the range [0, maxInteger].
const maxInteger = 999_999_999_999_999

// maxScale bounds how many periods an exact window may span; see [Quota].
const maxScale = 10

const second = int64(time.Second)

// Quota maps a limit to the quota q and the window w, in whole seconds, of
// a RateLimit-Policy item ("q=<q>;w=<w>"). The draft allows no sub-second
// windows, so the limit's sustained rate, Rate per Period, is rescaled:
//
//   - Exact: w is the shortest whole number of seconds that is a multiple
//     of Period, provided it spans at most 10 periods, and q = Rate × w /
//     Period. 100 per 1m gives q=100;w=60, 10 per 100ms gives q=100;w=1,
//     3 per 1.5s gives q=6;w=3, 2 per 400ms gives q=10;w=2.
//   - Fallback, for a Period with no such multiple (1 per 7ms, 10 per
//     1.001s): w = Period in seconds rounded up, and q = Rate × w / Period
//     rounded down, so the quota is never overstated: 1 per 7ms gives
//     q=142;w=1, 10 per 1.001s gives q=19;w=2.
//
// q counts sustained throughput only; a capacity (Burst) unlike Rate is
// reported apart, as sluice-burst (see [Write]). Limits that [sluice.Limit.Validate]
// rejects still map to valid syntax: a negative Rate counts as 0, a Period
// that is not positive counts as one second, and q and w are clamped to
// 999,999,999,999,999, the largest Integer a Structured Field carries. w
// is always at least 1.
func Quota(l sluice.Limit) (q, w int64) {
	rate := max(l.Rate, 0)
	p := int64(l.Period)
	if p <= 0 {
		return clamp(rate), 1
	}
	g := gcd(p, second)
	if k := second / g; k <= maxScale {
		// k periods are p/g whole seconds.
		hi, lo := bits.Mul64(uint64(rate), uint64(k))
		if hi != 0 {
			return maxInteger, clamp(p / g)
		}
		return clampU(lo), clamp(p / g)
	}
	w = p / second
	if p%second != 0 {
		w++
	}
	// floor(rate × w s / p) in 128 bits; w s < p + 1 s fits in a uint64.
	hi, lo := bits.Mul64(uint64(rate), uint64(w)*uint64(second))
	if hi >= uint64(p) {
		return maxInteger, clamp(w)
	}
	quo, _ := bits.Div64(hi, lo, uint64(p))
	return clampU(quo), clamp(w)
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// clamp limits v to [0, maxInteger].
func clamp(v int64) int64 { return min(max(v, 0), maxInteger) }

// clampU limits v to maxInteger.
func clampU(v uint64) int64 { return int64(min(v, maxInteger)) }
