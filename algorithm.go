package sluice

import (
	"fmt"
	"strings"
)

// Algorithm selects how a limit is enforced. The zero value is [TokenBucket].
type Algorithm uint8

const (
	// TokenBucket holds up to Burst tokens and refills Rate tokens per
	// Period, continuously. A request of cost n passes when n tokens are
	// there. It is stored as a GCRA theoretical arrival time: one integer.
	TokenBucket Algorithm = iota
	// SlidingWindow is the sliding window counter: the count of the
	// current fixed window plus the previous window's count weighted by how
	// much of it still overlaps the sliding window. Two integers per key.
	SlidingWindow
	// FixedWindow counts events in fixed windows of Period, aligned to the
	// Unix epoch. Cheapest, but up to twice the limit can pass around a
	// window boundary.
	FixedWindow
	// SlidingLog keeps a log of every admitted request inside the window:
	// exact, at O(limit) memory per key.
	SlidingLog
)

var algorithmNames = [...]string{
	TokenBucket:   "token_bucket",
	SlidingWindow: "sliding_window",
	FixedWindow:   "fixed_window",
	SlidingLog:    "sliding_log",
}

// String returns the algorithm's configuration name, such as "token_bucket".
func (a Algorithm) String() string {
	if int(a) < len(algorithmNames) {
		return algorithmNames[a]
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}

// Valid reports whether a is a known algorithm.
func (a Algorithm) Valid() bool { return int(a) < len(algorithmNames) }

// ParseAlgorithm returns the algorithm named s, as written by
// [Algorithm.String]. Matching ignores case, and "-" may stand for "_".
func ParseAlgorithm(s string) (Algorithm, error) {
	norm := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "-", "_")
	for i, name := range algorithmNames {
		if name == norm {
			return Algorithm(i), nil
		}
	}
	return 0, fmt.Errorf("sluice: unknown algorithm %q (known: %s)", s, strings.Join(algorithmNames[:], ", "))
}
