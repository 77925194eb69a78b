package algo

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

func TestTokenBucket(t *testing.T) {
	const sec = 1_000_000
	// 10 per second, capacity 3: interval 100ms.
	const iv, capy = 100_000, 3
	now := int64(1_700_000_000 * sec)
	tests := []struct {
		name          string
		tat, cost     int64
		wantAllowed   bool
		wantRemaining int64 // RemainingIf when allowed, Remaining otherwise
		wantRetry     int64
		wantNext      int64
		wantUnsat     bool
	}{
		{"fresh bucket", 0, 1, true, 2, 0, now + iv, false},
		{"fresh bucket full cost", 0, 3, true, 0, 0, now + 3*iv, false},
		{"empty bucket", now + 3*iv, 1, false, 0, iv, now + 3*iv, false},
		{"half a token short", now + 3*iv - iv/2, 1, false, 0, iv / 2, now + 3*iv - iv/2, false},
		{"peek on empty bucket", now + 3*iv, 0, true, 0, 0, now + 3*iv, false},
		{"cost above capacity", 0, 4, false, 3, 0, 0, true},
		{"stale state is a full bucket", now - 10*sec, 2, true, 1, 0, now + 2*iv, false},
		{"debt above capacity after a limit shrank", now + 10*iv, 1, false, 0, 8 * iv, now + 10*iv, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, next := TokenBucket(now, tc.tat, iv, capy, tc.cost, false)
			rem := o.Remaining()
			if o.Allowed {
				rem = o.RemainingIf()
			}
			if o.Allowed != tc.wantAllowed || rem != tc.wantRemaining || o.RetryAfter != tc.wantRetry || next != tc.wantNext || o.Unsatisfiable != tc.wantUnsat {
				t.Fatalf("got %+v next=%d, want allowed=%v remaining=%d retry=%d next=%d unsat=%v",
					o, next, tc.wantAllowed, tc.wantRemaining, tc.wantRetry, tc.wantNext, tc.wantUnsat)
			}
		})
	}
}

// TestTokenBucketAdmitsAgrees checks the inlined fast path against
// TokenBucket and Outcome.Result on random buckets around the boundary:
// wherever it admits, TokenBucket admits with the same arrival time and
// result; wherever it declines, TokenBucket refuses (or the hit is forced,
// which it never sees).
func TestTokenBucketAdmitsAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const now = int64(1_700_000_000_000_000)
	admitted, declined := 0, 0
	for range 200_000 {
		l := sluice.Limit{Rate: 1 + rng.Int64N(1000), Period: time.Duration(1+rng.Int64N(3600_000)) * time.Millisecond, Burst: rng.Int64N(2000)}
		if l.Validate() != nil {
			continue
		}
		iv, capy := l.IntervalMicros(), l.Capacity()
		n := NewTBNums(iv, capy)
		tau := n.Tau
		tat := now - tau + rng.Int64N(3*tau+2) // from a full bucket to one in debt
		if rng.IntN(10) == 0 {
			tat = 0 // a bucket never used
		}
		cost := rng.Int64N(capy + 3)
		next, ok := TokenBucketAdmits(now, tat, cost, n)
		o, want := TokenBucket(now, tat, iv, capy, cost, false)
		if ok != o.Allowed {
			t.Fatalf("%v tat %d cost %d: fast path ok=%v, TokenBucket allowed=%v", l, tat, cost, ok, o.Allowed)
		}
		if !ok {
			declined++
			continue
		}
		admitted++
		var got, ref sluice.Result
		AdmittedResult(&got, l, now, tat, next, cost, n)
		o.Result(&ref, l, true)
		ref.Receipt = sluice.Receipt{Taken: cost, Mark: want}
		if next != want || got != ref {
			t.Fatalf("%v tat %d cost %d: fast path next %d %+v, TokenBucket next %d %+v", l, tat, cost, next, got, want, ref)
		}
	}
	if admitted < 1000 || declined < 1000 {
		t.Fatalf("admitted %d, declined %d: the draw misses one side of the boundary", admitted, declined)
	}
}
