package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/lease"
)

// gated holds each backing Take until release is closed, saying on
// entered when one has started.
type gated struct {
	sluice.Refunder
	entered chan struct{}
	release chan struct{}
}

func (g *gated) Take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	g.entered <- struct{}{}
	<-g.release
	return g.Refunder.Take(ctx, hits, out)
}

// A call waiting for another's refill whose context ends reports a
// deadline as a timeout and a cancellation as what it is, with its cause.
func TestWaitForRefillContextEnds(t *testing.T) {
	cause := errors.New("client went away")
	for _, tc := range []struct {
		name    string
		ctx     func() (context.Context, func())
		kind    error
		is      error
		isCause bool
	}{
		{"cancelled", func() (context.Context, func()) {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(cause)
			return ctx, func() {}
		}, sluice.ErrUnavailable, context.Canceled, true},
		{"deadline", func() (context.Context, func()) {
			return context.WithDeadline(context.Background(), time.Unix(0, 0))
		}, sluice.ErrTimeout, context.DeadlineExceeded, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			back, clock := backing(t)
			g := &gated{Refunder: back, entered: make(chan struct{}, 1), release: make(chan struct{})}
			s := newStore(t, g, lease.Config{Clock: clock, Logger: quiet, SweepInterval: -1})
			h := hotHit("k")
			done := make(chan error, 1)
			go func() {
				out := make([]sluice.Result, 1)
				done <- s.Take(context.Background(), []sluice.Hit{h}, out)
			}()
			<-g.entered // the refill is in flight
			ctx, cancel := tc.ctx()
			defer cancel()
			err := s.Take(ctx, []sluice.Hit{h}, make([]sluice.Result, 1))
			close(g.release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			var se *sluice.StoreError
			if !errors.As(err, &se) || !errors.Is(err, tc.kind) || !errors.Is(err, tc.is) || se.Ambiguous {
				t.Fatalf("err = %v, want a non-ambiguous StoreError of kind %v wrapping %v", err, tc.kind, tc.is)
			}
			if tc.isCause != errors.Is(err, cause) {
				t.Fatalf("err = %v: wraps the cause %v: %v, want %v", err, cause, !tc.isCause, tc.isCause)
			}
		})
	}
}

// Close waits for a refill in flight and gives its lease back: nothing
// the refill took is left out of the bucket.
func TestCloseWaitsForRefillInFlight(t *testing.T) {
	back, clock := backing(t)
	g := &gated{Refunder: back, entered: make(chan struct{}, 1), release: make(chan struct{})}
	rec := newRecorder()
	s, err := lease.New(g, lease.Config{Clock: clock, Observer: rec, Logger: quiet, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	h := hotHit("k")
	taken := make(chan error, 1)
	go func() { taken <- s.Take(context.Background(), []sluice.Hit{h}, make([]sluice.Result, 1)) }()
	<-g.entered
	closed := make(chan error, 1)
	go func() { closed <- s.Close(context.Background()) }()
	select {
	case err := <-closed:
		close(g.release)
		<-taken
		t.Fatalf("Close returned (%v) with a refill in flight", err)
	case <-time.After(50 * time.Millisecond): // generous: Close must still be waiting
	}
	close(g.release)
	if err := <-taken; err != nil {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if got := peek(t, back, h); got != 99 {
		t.Fatalf("after Close: the bucket holds %d, want 99 (the one admitted hit's token out; refilled %d, returned %d, lost %d)",
			got, rec.refilled, rec.returned, rec.lost)
	}
}
