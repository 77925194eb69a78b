// Package hist is a latency histogram with log-linear buckets: values below
// 256 ns are exact, larger ones are kept to within 1/128 (0.8 %), which is
// far finer than the run-to-run noise of the figures it records. Recording
// is a few instructions and never allocates; each goroutine keeps its own
// histogram and the results are merged at the end.
package hist

import (
	"math"
	"math/bits"
	"time"
)

const (
	subBits  = 7
	subCount = 1 << subBits // buckets per power of two
	nBuckets = (64-subBits)*subCount + subCount
)

// Histogram counts durations. The zero value is empty and ready to use.
type Histogram struct {
	counts [nBuckets]uint64
	n      uint64
	sum    float64
	min    uint64
	max    uint64
}

func index(v uint64) int {
	s := bits.Len64(v) - (subBits + 1)
	if s < 0 {
		s = 0
	}
	return s*subCount + int(v>>uint(s))
}

// bounds returns the smallest and largest value that land in bucket i.
func bounds(i int) (lo, hi uint64) {
	if i < 2*subCount {
		return uint64(i), uint64(i)
	}
	s := i/subCount - 1
	m := uint64(i - s*subCount)
	return m << uint(s), (m+1)<<uint(s) - 1
}

// Record adds one duration. Negative durations count as 0.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(0)
	if d > 0 {
		v = uint64(d)
	}
	h.counts[index(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
}

// Merge adds every count of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Count returns how many durations were recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Mean returns the mean duration, 0 when empty.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// Max returns the largest duration recorded.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Quantile returns the q-quantile (0 < q ≤ 1): the smallest recorded
// duration such that at least q of all durations are at most it, up to the
// bucket's resolution (the bucket's midpoint, clamped to [min, max]).
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	if rank > h.n {
		rank = h.n
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := bounds(i)
			v := lo + (hi-lo)/2
			v = max(v, h.min)
			v = min(v, h.max)
			return time.Duration(v)
		}
	}
	return time.Duration(h.max)
}
