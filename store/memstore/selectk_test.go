package memstore

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestKthSmallest compares kthSmallest with sorting, on random inputs of
// every shape that matters: short, with many ties, sorted, reversed.
func TestKthSmallest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 2000 {
		n := 1 + r.IntN(200)
		xs := make([]int64, n)
		spread := []int64{2, 10, 1 << 40}[round%3]
		for i := range xs {
			xs[i] = r.Int64N(spread)
		}
		switch round % 5 {
		case 3:
			slices.Sort(xs)
		case 4:
			slices.Sort(xs)
			slices.Reverse(xs)
		}
		sorted := slices.Sorted(slices.Values(xs))
		k := r.IntN(n)
		if got := kthSmallest(slices.Clone(xs), k); got != sorted[k] {
			t.Fatalf("kthSmallest(%v, %d) = %d, want %d", xs, k, got, sorted[k])
		}
	}
}
