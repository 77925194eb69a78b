package storetest

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// Harness is one store under test, fresh and empty.
type Harness struct {
	// Store is the store under test.
	Store sluice.Store
	// SetTime sets the time the store decides by. Required.
	SetTime func(time.Time)
	// Atomic declares that Take is atomic for concurrent callers. The suite
	// then requires exact admission counts under contention.
	Atomic bool
	// Clients, if set, returns n independent clients of the same backend
	// (separate connections, separate store values) that share Store's
	// buckets and clock. The contention test spreads its goroutines over
	// them. When nil, the contention test shares Store.
	Clients func(t *testing.T, n int) []sluice.Store
	// Lease, when positive, declares a store that serves buckets from
	// local leases of up to Lease tokens (see store/lease). Held tokens
	// do not refill a bucket already full, so once time passes with a
	// lease held, such a store's answers may differ from an exact store's
	// by what the lease holds: the refund tests then compare Remaining
	// within Lease units and ResetAfter and RetryAfter within Lease
	// emission intervals. Every other case holds it to exact answers.
	// 0 for a store that decides every hit in its bucket.
	Lease int64
}

// Factory returns a fresh, empty store for one subtest. It registers its own
// cleanup with t.Cleanup.
type Factory func(t *testing.T) Harness

// Run runs the whole conformance suite against the stores newHarness makes.
func Run(t *testing.T, newHarness Factory) {
	t.Helper()
	t.Run("Steps", func(t *testing.T) { testSteps(t, newHarness) })
	t.Run("MultiRuleDenialConsumesNothing", func(t *testing.T) { testMultiRuleDenial(t, newHarness) })
	t.Run("ShadowNeverBlocks", func(t *testing.T) { testShadow(t, newHarness) })
	t.Run("SameBucketTwiceInOneCall", func(t *testing.T) { testSameBucketTwice(t, newHarness) })
	t.Run("KeysAreIsolated", func(t *testing.T) { testKeyIsolation(t, newHarness) })
	t.Run("InvalidHits", func(t *testing.T) { testInvalid(t, newHarness) })
	t.Run("ClockGoingBackwards", func(t *testing.T) { testClockBackwards(t, newHarness) })
	t.Run("Contention", func(t *testing.T) { testContention(t, newHarness) })
	t.Run("MixedCallsContention", func(t *testing.T) { testMixedContention(t, newHarness) })
	t.Run("MixedAlgorithmsAllOrNothing", func(t *testing.T) { testMixedAlgorithms(t, newHarness) })
	t.Run("ShadowEveryAlgorithm", func(t *testing.T) { testShadowEveryAlgorithm(t, newHarness) })
	t.Run("ForcedCharges", func(t *testing.T) { testForcedCharges(t, newHarness) })
	t.Run("HugeForcedCharge", func(t *testing.T) { testHugeForcedCharge(t, newHarness) })
	t.Run("BoundaryBurst", func(t *testing.T) { testBoundaryBurst(t, newHarness) })
	t.Run("ZeroCostIsOne", func(t *testing.T) { testZeroCostIsOne(t, newHarness) })
	t.Run("Peek", func(t *testing.T) { testPeek(t, newHarness) })
	t.Run("Partial", func(t *testing.T) { testPartial(t, newHarness) })
	t.Run("PartialInRequest", func(t *testing.T) { testPartialInRequest(t, newHarness) })
	t.Run("InvalidContract", func(t *testing.T) { testInvalidContract(t, newHarness) })
	t.Run("RefundExact", func(t *testing.T) { testRefundExact(t, newHarness) })
	t.Run("RefundAfterRefill", func(t *testing.T) { testRefundAfterRefill(t, newHarness) })
	t.Run("RefundInvalid", func(t *testing.T) { testRefundInvalid(t, newHarness) })
	t.Run("RefundRepeated", func(t *testing.T) { testRefundRepeated(t, newHarness) })
	t.Run("Reset", func(t *testing.T) { testReset(t, newHarness) })
	t.Run("Inspect", func(t *testing.T) { testInspect(t, newHarness) })
	t.Run("Limiter", func(t *testing.T) { testLimiter(t, newHarness) })
	t.Run("Calendar", func(t *testing.T) { testCalendar(t, newHarness) })
	t.Run("CalendarZones", func(t *testing.T) { testCalendarZones(t, newHarness) })
	t.Run("Penalty", func(t *testing.T) { testPenalty(t, newHarness) })
	t.Run("Concurrency", func(t *testing.T) { testConcurrency(t, newHarness) })
}
