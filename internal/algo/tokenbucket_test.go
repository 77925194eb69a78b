package algo

import "testing"

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
