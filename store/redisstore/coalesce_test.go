package redisstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
	"github.com/sluicehq/sluice/store/storetest"
)

func newCoalescingStore(t testing.TB, c *redis.Client, clock *storetest.Clock) *redisstore.Store {
	t.Helper()
	return newStoreWith(t, c, clock, redisstore.Config{Coalesce: 64})
}

// The whole conformance suite, with every call going through the coalescer.
func TestConformanceCoalesced(t *testing.T) {
	srv := redistest.Start(t)
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		clock := storetest.NewClock(time.Now())
		return storetest.Harness{
			Store:   newCoalescingStore(t, newClient(t, srv.Addr), clock),
			SetTime: clock.Set,
			Atomic:  true,
			Clients: func(t *testing.T, n int) []sluice.Store {
				stores := make([]sluice.Store, n)
				for i := range stores {
					stores[i] = newCoalescingStore(t, newClient(t, srv.Addr), clock)
				}
				return stores
			},
		}
	})
}

// pauseRedis holds every client's commands for d, so that calls pile up
// behind the one in flight.
func pauseRedis(t *testing.T, c *redis.Client, d time.Duration) {
	t.Helper()
	if err := c.Do(context.Background(), "CLIENT", "PAUSE", d.Milliseconds(), "ALL").Err(); err != nil {
		t.Fatal(err)
	}
}

// TestCoalescedRequestsAreDecidedOneByOne queues 20 requests behind one in
// flight. They share few script calls, yet each is decided atomically on
// its own: exactly the capacity passes, and a request refused by its second
// rule consumes nothing from its first.
func TestCoalescedRequestsAreDecidedOneByOne(t *testing.T) {
	srv := redistest.Start(t)
	admin := newClient(t, srv.Addr)
	s := newCoalescingStore(t, newClient(t, srv.Addr), nil)
	redisstore.WaitStartupCheck(s)
	free := sluice.Hit{Key: "free", Limit: sluice.PerHour(100), Cost: 1}
	tight := sluice.Hit{Key: "tight", Limit: sluice.PerHour(5), Cost: 1}
	before := commandCalls(t, admin, "evalsha")
	pauseRedis(t, admin, 200*time.Millisecond)

	const n = 20
	var wg sync.WaitGroup
	admitted := make(chan bool, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := make([]sluice.Result, 2)
			if err := s.Take(context.Background(), []sluice.Hit{free, tight}, out); err != nil {
				t.Error(err)
				return
			}
			admitted <- sluice.Admitted([]sluice.Hit{free, tight}, out)
		}()
	}
	wg.Wait()
	close(admitted)
	count := 0
	for a := range admitted {
		if a {
			count++
		}
	}
	if count != 5 {
		t.Fatalf("admitted %d, want 5", count)
	}
	if got := peek(t, s, free).Remaining; got != 95 {
		t.Fatalf("free bucket: %d left, want 95 (the 15 refused requests consumed nothing)", got)
	}
	calls := commandCalls(t, admin, "evalsha") - before
	t.Logf("%d requests in %d script calls", n, calls)
	if calls >= n || calls < 2 {
		t.Fatalf("%d script calls for %d queued requests: nothing was coalesced", calls, n)
	}
}

func TestCoalescedCallerCancellation(t *testing.T) {
	srv := redistest.Start(t)
	admin := newClient(t, srv.Addr)
	s := newCoalescingStore(t, newClient(t, srv.Addr), nil)
	redisstore.WaitStartupCheck(s)
	hit := sluice.Hit{Key: "k", Limit: sluice.PerHour(100), Cost: 1}
	pauseRedis(t, admin, 300*time.Millisecond)

	// The first call goes out and waits on the paused server; the second
	// queues behind it and gives up before it is sent.
	var wg sync.WaitGroup
	wg.Add(1)
	var firstErr error
	go func() {
		defer wg.Done()
		firstErr = s.Take(context.Background(), []sluice.Hit{hit}, make([]sluice.Result, 1))
	}()
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := s.Take(ctx, []sluice.Hit{hit}, make([]sluice.Result, 1))
	if !errors.Is(err, sluice.ErrTimeout) || sluice.IsAmbiguous(err) {
		t.Fatalf("a call that gave up while queued: %v, want an unambiguous timeout", err)
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("the call in flight failed with the other's cancellation: %v", firstErr)
	}
	if got := peek(t, s, hit).Remaining; got != 99 {
		t.Fatalf("remaining %d, want 99: the abandoned call was applied", got)
	}
}

func TestCoalescedCorruptKeyFailsOnlyItsRequest(t *testing.T) {
	srv := redistest.Start(t)
	admin := newClient(t, srv.Addr)
	s := newCoalescingStore(t, newClient(t, srv.Addr), nil)
	redisstore.WaitStartupCheck(s)
	bad := sluice.Hit{Key: "bad", Limit: sluice.PerHour(10), Cost: 1}
	admin.HSet(context.Background(), redisstore.KeyOf(s, bad), "f", "v")
	pauseRedis(t, admin, 150*time.Millisecond)
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := sluice.Hit{Key: "good", Limit: sluice.PerHour(100), Cost: 1}
			if i == 5 {
				h = bad
			}
			errs[i] = s.Take(context.Background(), []sluice.Hit{h}, make([]sluice.Result, 1))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if (i == 5) != errors.Is(err, sluice.ErrCorruptState) || (i != 5 && err != nil) {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if got := peek(t, s, sluice.Hit{Key: "good", Limit: sluice.PerHour(100)}).Remaining; got != 91 {
		t.Fatalf("good bucket: %d left, want 91", got)
	}
}

// After Redis lost the script, a coalesced batch is reloaded with one EVAL
// like a lone call: no error reaches any member.
func TestCoalescedBatchAfterScriptFlush(t *testing.T) {
	srv := redistest.Start(t)
	admin := newClient(t, srv.Addr)
	s := newCoalescingStore(t, newClient(t, srv.Addr), nil)
	redisstore.WaitStartupCheck(s)
	if err := admin.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	pauseRedis(t, admin, 100*time.Millisecond)
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Take(context.Background(), []sluice.Hit{{Key: "k", Limit: sluice.PerHour(100), Cost: 1}}, make([]sluice.Result, 1)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := peek(t, s, sluice.Hit{Key: "k", Limit: sluice.PerHour(100)}).Remaining; got != 90 {
		t.Fatalf("remaining %d, want 90", got)
	}
	if s.ScriptReloads() != 1 {
		t.Fatalf("script reloads %d, want 1", s.ScriptReloads())
	}
}

// slowClient delays every EVALSHA, so batches stay in flight long enough to
// be abandoned.
type slowClient struct {
	*redis.Client
	delay time.Duration
}

func (c *slowClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	time.Sleep(c.delay)
	return c.Client.EvalSha(ctx, sha, keys, args...)
}

// A caller that gives up while its batch is in flight may reuse its hits
// for another request at once (the middleware pools them). The coalescer
// must not read them again: not to build the batch, not to retry it one
// request at a time after a corrupt key. (Run with -race.)
func TestCoalescedAbandonedCallerIsNotReread(t *testing.T) {
	srv := redistest.Start(t)
	rc := newClient(t, srv.Addr)
	s := newStoreWith(t, &slowClient{Client: rc, delay: 200 * time.Millisecond}, nil,
		redisstore.Config{Coalesce: 8, StartupCheckTimeout: -1})
	bad := sluice.Hit{Key: "bad", Limit: sluice.PerHour(5), Cost: 1}
	rc.HSet(context.Background(), redisstore.KeyOf(s, bad), "x", "y")
	var wg sync.WaitGroup
	take := func(ctx context.Context, hits []sluice.Hit, after func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.Take(ctx, hits, make([]sluice.Result, len(hits)))
			if after != nil {
				after()
			}
		}()
	}
	take(context.Background(), []sluice.Hit{{Key: "leader", Limit: sluice.PerHour(5), Cost: 1}}, nil)
	time.Sleep(20 * time.Millisecond)
	take(context.Background(), []sluice.Hit{bad}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	hits := []sluice.Hit{{Key: "victim", Limit: sluice.PerHour(5), Cost: 1}}
	take(ctx, hits, func() { hits[0].Key, hits[0].Cost = "reused-by-next-request", 3 })
	time.Sleep(250 * time.Millisecond) // the leader is done; [bad, victim] is in flight
	cancel()
	wg.Wait()
	reused := redisstore.KeyOf(s, sluice.Hit{Key: "reused-by-next-request", Limit: sluice.PerHour(5)})
	if n := rc.Exists(context.Background(), reused).Val(); n != 0 {
		t.Fatalf("the batch charged the hits its abandoned caller reused")
	}
}
