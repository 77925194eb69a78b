package redisstore

import (
	"context"
	"testing"
	"time"
)

// TestReadLate: a timeout found more than a quarter of the call's time,
// and 2 ms, past its deadline is the process's; one found at its deadline
// is Redis's.
func TestReadLate(t *testing.T) {
	for _, tt := range []struct {
		name      string
		had, past time.Duration // the call's time before its deadline; how long ago the deadline passed
		late      bool
	}{
		// Scheduling this test late only makes a call later: the calls
		// not late have seconds to spare.
		{"at its deadline", 10 * time.Second, time.Millisecond, false},
		{"late by less than a quarter of its time", 10 * time.Second, 2 * time.Second, false},
		{"late by more than a quarter of its time", 40 * time.Millisecond, 20 * time.Millisecond, true},
		{"sent after its deadline, 2 ms on", -30 * time.Millisecond, 3 * time.Millisecond, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			deadline := time.Now().Add(-tt.past)
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			if got := readLate(ctx, deadline.Add(-tt.had)); got != tt.late {
				t.Errorf("late %v, want %v", got, tt.late)
			}
		})
	}
	if readLate(context.Background(), time.Now().Add(-time.Hour)) {
		t.Error("a call without a deadline read late")
	}
}

// TestAnsweredSince: a late timeout is left out of the breaker only when
// Redis answered a call sent after it: while Redis answers nothing, every
// timeout counts.
func TestAnsweredSince(t *testing.T) {
	b := newBreaker("test", BreakerConfig{}, nil)
	sent := time.Now()
	if b.answeredSince(sent) {
		t.Fatal("answered since, with no answer at all")
	}
	b.answered(sent.Add(-time.Second))
	if b.answeredSince(sent) {
		t.Error("answered since, with the only answer to a call sent before")
	}
	b.answered(sent.Add(10 * time.Millisecond))
	if !b.answeredSince(sent) {
		t.Error("not answered since, with an answer to a call sent 10 ms after")
	}
}
