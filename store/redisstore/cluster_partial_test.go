package redisstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// testClusterPartial: a request of two hits on two masters, one of them
// busy (DEBUG SLEEP past the read timeout): TakePartial decides the healthy
// hit, keeps its take and names the other as failed; a Refund of the kept
// take's receipt gives it back exactly.
func testClusterPartial(t *testing.T, c *redistest.Cluster) {
	ctx := context.Background()
	opt := clusterOptions(c.Addrs())
	opt.ReadTimeout = 100 * time.Millisecond
	client := redis.NewClusterClient(opt)
	defer client.Close()
	s := newStoreWith(t, client, nil, redisstore.Config{Breaker: redisstore.BreakerConfig{Disabled: true}})
	redisstore.WaitStartupCheck(s)
	hits := hitsInSlots(t, s, c, 2, "partial-", sluice.TokenBucket, sluice.PerHour(100))
	if len(hits) != 2 {
		t.Fatalf("found %d hits on distinct masters, want 2", len(hits))
	}
	healthy := c.MasterOf(redisstore.SlotOf(redisstore.KeyOf(s, hits[0])))
	busy := c.MasterOf(redisstore.SlotOf(redisstore.KeyOf(s, hits[1])))
	if healthy == nil || busy == nil || healthy.Addr == busy.Addr {
		t.Fatalf("the hits' masters %v and %v are not two masters", healthy, busy)
	}
	out := make([]sluice.Result, len(hits))
	if err := s.TakePartial(ctx, hits, out); err != nil || !sluice.Admitted(hits, out) {
		t.Fatalf("TakePartial on a healthy cluster: %+v %v", out, err)
	}

	// whileBusy runs take while busy's master sleeps, then waits until the
	// sleep is over and its queued commands have run.
	whileBusy := func(take func() error) error {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = redistest.Do(busy.Addr, "DEBUG", "SLEEP", "0.7")
		}()
		waitBusy(t, busy.Addr, 150*time.Millisecond) // then over 0.5 s of the sleep is left, against a 100 ms read timeout
		err := take()
		<-done
		time.Sleep(100 * time.Millisecond) // its queued commands ran
		return err
	}

	err := whileBusy(func() error { return s.TakePartial(ctx, hits, out) })
	var pe *sluice.PartialError
	if !errors.As(err, &pe) || !slices.Equal(pe.Failed, []int{1}) {
		t.Fatalf("TakePartial with hit 1's master busy: %v, want a PartialError failing hit 1 only", err)
	}
	if !errors.Is(err, sluice.ErrTimeout) || !sluice.IsAmbiguous(err) {
		t.Fatalf("the failed hit's error %v, want an ambiguous timeout", err)
	}
	if !out[0].Allowed || out[0].Receipt.Taken != 1 || out[0].Remaining != 98 {
		t.Fatalf("the healthy hit's result %+v, want allowed, 1 taken, 98 remaining", out[0])
	}
	if got := peek(t, s, hits[0]).Remaining; got != 98 {
		t.Fatalf("the healthy bucket has %d after two takes of 1, want 98: its take stands", got)
	}
	kept := out[0].Receipt

	if err := s.Refund(ctx, []sluice.Refund{{Hit: hits[0], Receipt: kept}}); err != nil {
		t.Fatal(err)
	}
	if got := peek(t, s, hits[0]).Remaining; got != 99 {
		t.Fatalf("the healthy bucket has %d after the kept take's refund, want 99", got)
	}
}
