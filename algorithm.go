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

// MaxLogLimit caps the limit of a [SlidingLog] rule: the log holds one entry
// per admitted request, and every decision reads the whole window, so a
// larger limit would make a slow Redis script and a large key.
const MaxLogLimit = 1000

// maxWindowProduct bounds Rate × Period (µs) for [SlidingWindow], whose
// exact admission test multiplies counts by window lengths.
const maxWindowProduct = int64(1) << 51

// ValidateLimit reports why a cannot enforce l, beyond [Limit.Validate], as
// an error wrapping [ErrInvalidLimit], or nil:
//
//   - the window algorithms (SlidingWindow, FixedWindow, SlidingLog) admit
//     Rate per Period and have no separate burst: Burst must be 0 or Rate;
//   - SlidingWindow needs Rate × Period (in µs) ≤ 2^51, e.g. at most
//     625,000 per hour;
//   - SlidingLog needs Rate ≤ [MaxLogLimit].
func (a Algorithm) ValidateLimit(l Limit) error {
	if err := l.Validate(); err != nil {
		return err
	}
	if a == TokenBucket {
		return nil
	}
	if l.Burst != 0 && l.Burst != l.Rate {
		return fmt.Errorf("%w: %v: %v admits Rate per Period and has no burst; leave Burst 0", ErrInvalidLimit, l, a)
	}
	switch {
	case a == SlidingWindow && l.Rate > maxWindowProduct/l.PeriodMicros():
		return fmt.Errorf("%w: %v: %v needs rate × period (µs) ≤ 2^51", ErrInvalidLimit, l, a)
	case a == SlidingLog && l.Rate > MaxLogLimit:
		return fmt.Errorf("%w: %v: %v keeps one entry per request; its rate is capped at %d per period", ErrInvalidLimit, l, a, MaxLogLimit)
	}
	return nil
}
