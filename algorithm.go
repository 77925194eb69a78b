package sluice

import (
	"fmt"
	"strings"
)

// Algorithm selects how a limit is enforced. The zero value is [TokenBucket].
//
// The window algorithms (SlidingWindow, FixedWindow, SlidingLog) admit Rate
// per Period and have no separate burst; see [Algorithm.ValidateLimit].
// Every algorithm refuses a request whose cost exceeds the limit as
// Unsatisfiable (it could never pass) instead of giving a Retry-After that
// would never come true, and a forced hit (an after-the-fact charge) may
// put any of them into debt of at most one more limit. Every store gives
// the same answers: see the store/storetest conformance suite.
type Algorithm uint8

const (
	// TokenBucket holds up to Capacity() tokens (Burst, default Rate) and
	// refills Rate tokens per Period, continuously, one every
	// IntervalMicros. A request of cost n passes when n tokens are there.
	// After a quiet spell a whole burst may pass at once; sustained, the
	// rate is exact. Over any interval of length d at most
	// Capacity() + d/interval pass. Retry-After is the time until n tokens
	// are back; ResetAfter the time until the bucket is full. Stored as a
	// GCRA theoretical arrival time: one integer, 138 B per bucket in Redis
	// with a 25-byte key (as much as any integer string).
	TokenBucket Algorithm = iota
	// SlidingWindow is the sliding window counter: a request passes when
	// cur + cost + ceil(prev × (Period−elapsed)/Period) ≤ Rate, where cur
	// counts the current fixed window, prev the previous one, and elapsed
	// is the time into the current window. The previous window's count is
	// assumed spread evenly, which approximates a true sliding window: at
	// most Rate per aligned window, and for adversarial timing up to 2×Rate
	// in some window of length Period (with even traffic it stays close to
	// Rate). The rounding up makes it strict, never loose. Retry-After is
	// exact for this formula. Limit: Rate ≤ 499,999 and Rate × Period(µs)
	// ≤ 2^51. Stored as one packed integer, 138 B per bucket in Redis.
	SlidingWindow
	// FixedWindow counts cost in fixed windows of Period aligned to the
	// Unix epoch (so every node agrees where they start); a request passes
	// when count + cost ≤ Rate. Cheapest, but a client can pass Rate just
	// before a window ends and Rate again just after: up to 2×Rate within a
	// few milliseconds. Retry-After is the time until the window ends.
	// Stored as one packed integer, 138 B per bucket in Redis.
	FixedWindow
	// SlidingLog logs every admitted request with its cost and passes a
	// request when the costs logged in the last Period plus its own stay
	// within Rate: exact, never more than Rate in any window of length
	// Period. Retry-After is the time until enough logged cost leaves the
	// window. Memory is one entry per admitted request (a sorted set in
	// Redis, 186 B for a bucket of one entry), so Rate is capped at
	// [MaxLogLimit].
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

// MaxSlidingWindowLimit caps the limit of a [SlidingWindow] rule, so its
// two counts pack into one integer (one int-encoded Redis string).
const MaxSlidingWindowLimit = 499_999

// ValidateLimit reports why a cannot enforce l, beyond [Limit.Validate], as
// an error wrapping [ErrInvalidLimit], or nil:
//
//   - the window algorithms (SlidingWindow, FixedWindow, SlidingLog) admit
//     Rate per Period and have no separate burst: Burst must be 0 or Rate;
//   - SlidingWindow needs Rate ≤ [MaxSlidingWindowLimit] and Rate × Period
//     (in µs) ≤ 2^51 (at most 625,000 per hour);
//   - SlidingLog needs Rate ≤ [MaxLogLimit];
//   - a calendar limit ([Limit.Calendar]) needs FixedWindow.
func (a Algorithm) ValidateLimit(l Limit) error {
	if err := l.Validate(); err != nil {
		return err
	}
	if l.Calendar != NoCalendar && a != FixedWindow {
		return fmt.Errorf("%w: %v: a calendar limit counts as a fixed window; %v cannot enforce it", ErrInvalidLimit, l, a)
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
	case a == SlidingWindow && l.Rate > MaxSlidingWindowLimit:
		return fmt.Errorf("%w: %v: %v allows at most %d per period", ErrInvalidLimit, l, a, MaxSlidingWindowLimit)
	case a == SlidingLog && l.Rate > MaxLogLimit:
		return fmt.Errorf("%w: %v: %v keeps one entry per request; its rate is capped at %d per period", ErrInvalidLimit, l, a, MaxLogLimit)
	}
	return nil
}
