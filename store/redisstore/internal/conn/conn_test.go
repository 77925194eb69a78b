package conn

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

func TestTooLate(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		name     string
		deadline time.Duration // from now; 0: none
		rtt      time.Duration
		late     bool
	}{
		{"no deadline", 0, 20 * time.Millisecond, false},
		{"no estimate", time.Millisecond, 0, false},
		{"more than a round trip left", 21 * time.Millisecond, 20 * time.Millisecond, false},
		{"a round trip left", 20 * time.Millisecond, 20 * time.Millisecond, true},
		{"less", 5 * time.Millisecond, 20 * time.Millisecond, true},
		{"past", -time.Millisecond, 20 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.deadline != 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, now.Add(tc.deadline))
				defer cancel()
			}
			err := tooLate(ctx, now, tc.rtt)
			if late := err != nil; late != tc.late {
				t.Fatalf("tooLate = %v, want late %v", err, tc.late)
			}
			if err != nil && (!errors.Is(err, sluice.ErrTimeout) || sluice.IsAmbiguous(err)) {
				t.Errorf("tooLate = %v, want an unambiguous timeout", err)
			}
		})
	}
}

func TestRTTEstimate(t *testing.T) {
	var e RTT
	if e.Get() != 0 {
		t.Fatalf("zero estimate %v", e.Get())
	}
	e.seed(16 * time.Millisecond)
	e.seed(time.Second) // only the first seed counts
	if got := e.Get(); got != 16*time.Millisecond {
		t.Fatalf("seeded estimate %v, want 16ms", got)
	}
	e.Observe(24 * time.Millisecond) // an eighth of the way
	if got := e.Get(); got != 17*time.Millisecond {
		t.Fatalf("estimate %v, want 17ms", got)
	}
}
