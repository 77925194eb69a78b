package lease_test

import (
	"context"
	"errors"
	"sync/atomic"
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
	open    atomic.Bool // pass calls straight through
}

func (g *gated) Take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	if g.open.Load() {
		return g.Refunder.Take(ctx, hits, out)
	}
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

// When Close's context ends before a refill in flight does, what that
// refill takes beyond its hit is counted as lost.
func TestCloseTimeoutCountsLateRefill(t *testing.T) {
	back, clock := backing(t)
	g := &gated{Refunder: back, entered: make(chan struct{}, 1), release: make(chan struct{})}
	g.open.Store(true)
	rec := newRecorder()
	s, err := lease.New(g, lease.Config{Clock: clock, Observer: rec, Logger: quiet, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	h := hotHit("k")
	for range 20 { // the key's K grows
		take(t, s, h)
	}
	clock.Advance(time.Minute) // the lease expires: the next hit refills
	if err := s.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.open.Store(false)
	taken := make(chan error, 1)
	go func() { taken <- s.Take(context.Background(), []sluice.Hit{h}, make([]sluice.Result, 1)) }()
	<-g.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	close(g.release)
	if err := <-taken; err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	held := peek(t, back, h) // what the bucket holds
	if rec.lost == 0 || rec.lost != 100-held-1 {
		t.Fatalf("lost %d after a refill Close did not wait for; the bucket holds %d of 100 with 1 admitted, want %d lost",
			rec.lost, held, 100-held-1)
	}
}
