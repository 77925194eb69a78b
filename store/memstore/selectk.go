package memstore

// kthSmallest returns the k-th smallest of xs (k from 0), reordering xs.
// It selects in linear time on average (quickselect, median-of-three
// pivots), where sorting a shard's expiries to find one threshold would
// take n log n.
func kthSmallest(xs []int64, k int) int64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		p := median3(xs[lo], xs[lo+(hi-lo)/2], xs[hi])
		i, j := lo, hi
		for i <= j {
			for xs[i] < p {
				i++
			}
			for xs[j] > p {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		// Now xs[lo..j] <= p <= xs[i..hi], and xs[j+1..i-1] == p.
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return p
		}
	}
	return xs[k]
}

func median3(a, b, c int64) int64 {
	if a > b {
		a, b = b, a
	}
	if b > c {
		b = c
	}
	if a > b {
		b = a
	}
	return b
}
