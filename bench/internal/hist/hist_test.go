package hist

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestIndexBoundsRoundTrip(t *testing.T) {
	last := -1
	for _, v := range []uint64{0, 1, 127, 128, 255, 256, 257, 511, 512, 1000, 1 << 20, 1<<40 + 12345, 1<<63 - 1, 1 << 63} {
		i := index(v)
		if i < 0 || i >= nBuckets {
			t.Fatalf("index(%d) = %d out of range", v, i)
		}
		if i < last {
			t.Fatalf("index not monotonic at %d", v)
		}
		last = i
		lo, hi := bounds(i)
		if v < lo || v > hi {
			t.Fatalf("v=%d: bucket %d holds [%d, %d]", v, i, lo, hi)
		}
		if v >= 256 && float64(hi-lo) > float64(lo)/128+1 {
			t.Fatalf("v=%d: bucket [%d, %d] too wide", v, lo, hi)
		}
	}
}

func TestQuantileMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h, a, b Histogram
	vals := make([]time.Duration, 100_000)
	for i := range vals {
		// log-normal-ish latencies between 20 µs and tens of ms
		d := time.Duration(20_000 * (1 + r.ExpFloat64()*r.ExpFloat64()*10))
		vals[i] = d
		h.Record(d)
		if i%2 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(&b)
	slices.Sort(vals)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		want := vals[int(q*float64(len(vals)))-1]
		for name, hh := range map[string]*Histogram{"single": &h, "merged": &a} {
			got := hh.Quantile(q)
			if diff := float64(got-want) / float64(want); diff > 0.01 || diff < -0.01 {
				t.Errorf("%s q=%v: got %v, want %v (±1%%)", name, q, got, want)
			}
		}
	}
	if h.Count() != uint64(len(vals)) || h.Max() != vals[len(vals)-1] {
		t.Errorf("count %d max %v", h.Count(), h.Max())
	}
}

func TestEmpty(t *testing.T) {
	var h Histogram
	if h.Quantile(0.99) != 0 || h.Mean() != 0 || h.Count() != 0 {
		t.Fatal("empty histogram should report zeros")
	}
	h.Record(-5)
	if h.Quantile(0.5) != 0 {
		t.Fatal("negative durations count as 0")
	}
}
