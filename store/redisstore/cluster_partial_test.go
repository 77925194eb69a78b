package redisstore_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// testClusterPartial: a request of two hits on two masters, one of them
// busy (DEBUG SLEEP past the read timeout): TakePartial decides the healthy
// hit, keeps its take and names the other as failed; Take fails the whole
// request and gives the healthy take back; a Refund of the kept take's
// receipt gives it back exactly.
//
// The client makes one attempt per call (MaxRedirects -1): otherwise a
// command whose connection to the busy master could not be set up (its
// handshake timing out) is sent again on the next attempt, as it never
// ran, and after a few attempts the master wakes and the call succeeds, as
// it should. So a call lasts at most a read timeout or a handshake's, far
// less than the sleep, and each outcome is asserted only when the test's
// own clock shows that the sleep covered the whole call; if it did not (a
// stalled machine), the scenario runs again on fresh keys.
func testClusterPartial(t *testing.T, c *redistest.Cluster) {
	opt := clusterOptions(c.Addrs())
	opt.ReadTimeout = 100 * time.Millisecond
	opt.MaxRedirects = -1
	client := redis.NewClusterClient(opt)
	defer client.Close()
	s := newStoreWith(t, client, nil, redisstore.Config{Breaker: redisstore.BreakerConfig{Disabled: true}})
	redisstore.WaitStartupCheck(s)
	const attempts = 5
	for i := range attempts {
		if clusterPartialOnce(t, c, s, "partial-"+strconv.Itoa(i)+"-") {
			return
		}
		t.Logf("attempt %d: the busy master's sleep did not cover a whole call; again on fresh keys", i)
	}
	t.Fatalf("in %d attempts the busy master's sleep never covered a whole call", attempts)
}

// busySleep is how long the busy master sleeps: far more than a call lasts
// with one attempt (a 100 ms read timeout), and less than the cluster's
// node timeout (1 s), so that the master is not failed over.
const busySleep = 800 * time.Millisecond

// clusterPartialOnce runs testClusterPartial's scenario on keys starting
// with prefix. It returns false, having asserted nothing about a busy
// call, when the sleep did not cover that call.
func clusterPartialOnce(t *testing.T, c *redistest.Cluster, s *redisstore.Store, prefix string) bool {
	ctx := context.Background()
	hits := hitsInSlots(t, s, c, 2, prefix, sluice.TokenBucket, sluice.PerHour(100))
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
	// sleep is over and its queued commands have run. covered reports
	// whether the sleep surely lasted the whole call: it began after sent
	// and ended before ended, so it began before the call if ended less
	// the sleep is not after the call's start, and it ended after the call
	// if sent plus the sleep is not before the call's end.
	whileBusy := func(take func() error) (err error, covered bool) {
		sent := time.Now()
		done := make(chan time.Time, 1)
		go func() {
			_, _ = redistest.Do(busy.Addr, "DEBUG", "SLEEP", strconv.FormatFloat(busySleep.Seconds(), 'f', -1, 64))
			done <- time.Now()
		}()
		waitBusy(t, busy.Addr, 150*time.Millisecond)
		start := time.Now()
		err = take()
		end := time.Now()
		ended := <-done
		time.Sleep(100 * time.Millisecond) // its queued commands ran
		return err, !ended.Add(-busySleep).After(start) && !end.After(sent.Add(busySleep))
	}

	err, covered := whileBusy(func() error { return s.TakePartial(ctx, hits, out) })
	if !covered {
		return false
	}
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

	err, covered = whileBusy(func() error { return s.Take(ctx, hits, out) })
	if !covered {
		return false
	}
	if err == nil || errors.As(err, &pe) {
		t.Fatalf("Take with hit 1's master busy: %v, want a failure of the whole request", err)
	}
	if got := peek(t, s, hits[0]).Remaining; got != 98 {
		t.Fatalf("the healthy bucket has %d after Take failed, want 98: its take given back", got)
	}

	if err := s.Refund(ctx, []sluice.Refund{{Hit: hits[0], Receipt: kept}}); err != nil {
		t.Fatal(err)
	}
	if got := peek(t, s, hits[0]).Remaining; got != 99 {
		t.Fatalf("the healthy bucket has %d after the kept take's refund, want 99", got)
	}
	return true
}
