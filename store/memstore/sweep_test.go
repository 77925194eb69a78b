package memstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
	"go.uber.org/goleak"
)

func TestSweepForgetsFullBuckets(t *testing.T) {
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	s := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1})
	defer s.Close()
	out := make([]sluice.Result, 1)
	for _, k := range []string{"a", "b", "c"} {
		if err := s.Take(context.Background(), []sluice.Hit{{Key: k, Limit: sluice.PerSecond(1).WithBurst(10), Cost: 3}}, out); err != nil {
			t.Fatal(err)
		}
	}
	// A peek on a bucket never used stores nothing.
	if err := s.Take(context.Background(), []sluice.Hit{{Key: "peek", Limit: sluice.PerSecond(1), Cost: 0}}, out); err != nil {
		t.Fatal(err)
	}
	if n := s.Len(); n != 3 {
		t.Fatalf("Len = %d, want 3", n)
	}
	clock.Advance(3*time.Second - time.Microsecond)
	if n := s.Sweep(); n != 0 {
		t.Fatalf("swept %d buckets before they were full", n)
	}
	clock.Advance(time.Microsecond)
	if n := s.Sweep(); n != 3 || s.Len() != 0 {
		t.Fatalf("swept %d, %d left; want 3 swept, none left", n, s.Len())
	}
}

func TestCloseStopsSweeperAndRefusesTakes(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := memstore.New(memstore.Config{SweepInterval: time.Millisecond})
	time.Sleep(5 * time.Millisecond) // let the sweeper tick at least once
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	err := s.Take(context.Background(), []sluice.Hit{{Key: "k", Limit: sluice.PerSecond(1), Cost: 1}}, make([]sluice.Result, 1))
	if !errors.Is(err, sluice.ErrClosed) {
		t.Fatalf("Take after Close: %v, want ErrClosed", err)
	}
}
