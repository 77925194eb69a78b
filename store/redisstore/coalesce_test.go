package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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
	if err := c.Do(context.Background(), "CLIENT", "PAUSE", d.Milliseconds()).Err(); err != nil {
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

	// The first calls go out, one per lane, and wait on the paused server;
	// the next queues behind them and gives up before it is sent.
	var wg sync.WaitGroup
	firstErrs := make([]error, redisstore.Lanes)
	for i := range firstErrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			firstErrs[i] = s.Take(context.Background(), []sluice.Hit{hit}, make([]sluice.Result, 1))
		}()
	}
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := s.Take(ctx, []sluice.Hit{hit}, make([]sluice.Result, 1))
	if !errors.Is(err, sluice.ErrTimeout) || sluice.IsAmbiguous(err) {
		t.Fatalf("a call that gave up while queued: %v, want an unambiguous timeout", err)
	}
	wg.Wait()
	for _, err := range firstErrs {
		if err != nil {
			t.Fatalf("a call in flight failed with the other's cancellation: %v", err)
		}
	}
	if got, want := peek(t, s, hit).Remaining, int64(100-redisstore.Lanes); got != want {
		t.Fatalf("remaining %d, want %d: the abandoned call was applied", got, want)
	}
}

func TestCoalescedCorruptKeyHealsInItsBatch(t *testing.T) {
	srv := redistest.Start(t)
	admin := newClient(t, srv.Addr)
	events := &healCounter{}
	s := newStoreWith(t, newClient(t, srv.Addr), nil, redisstore.Config{Coalesce: 64, Events: events})
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
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if got := peek(t, s, sluice.Hit{Key: "good", Limit: sluice.PerHour(100)}).Remaining; got != 91 {
		t.Fatalf("good bucket: %d left, want 91", got)
	}
	if got := peek(t, s, bad).Remaining; got != 9 {
		t.Fatalf("healed bucket: %d left, want 9", got)
	}
	if got := events.healed.Load(); got != 1 {
		t.Fatalf("%d keys reported healed, want 1", got)
	}
}

// After Redis lost the script, a coalesced batch is reloaded with one EVAL
// like a lone call: no error reaches any member.
func TestCoalescedBatchAfterScriptFlush(t *testing.T) {
	srv := redistest.Start(t)
	admin := newClient(t, srv.Addr)
	s := newCoalescingStore(t, newClient(t, srv.Addr), nil)
	redisstore.WaitStartupCheck(s)
	waitConnsReady(t, s)
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
	// Each call in flight when the script was missing reloads it once.
	if n := s.ScriptReloads(); n < 1 || n > redisstore.Lanes {
		t.Fatalf("script reloads %d, want 1 to %d (one per call in flight)", n, redisstore.Lanes)
	}
}

// slowClient delays every EVALSHA, so batches stay in flight long enough to
// be abandoned.
type slowClient struct {
	*redis.Client
	delay time.Duration
}

func (c *slowClient) Process(ctx context.Context, cmd redis.Cmder) error {
	if cmd.Name() == "evalsha" {
		time.Sleep(c.delay)
	}
	return c.Client.Process(ctx, cmd)
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

// A lone member whose caller gave up while its batch of one was in flight,
// and that found its bucket full, is answered with a bare integer (see
// take.lua): splitting that reply reads nothing of the hits the caller has
// since reused (the race detector tells). One lane, so the victim's batch
// goes out alone once the leader's is back; the test waits for the
// victim's reply before it ends.
func TestCoalescedAbandonedLoneCallerIsNotReread(t *testing.T) {
	srv := redistest.Start(t)
	rc := newClient(t, srv.Addr)
	s := newStoreWith(t, &slowClient{Client: rc, delay: 200 * time.Millisecond}, nil,
		redisstore.Config{Coalesce: 8, CoalesceLanes: 1, StartupCheckTimeout: -1})
	var wg sync.WaitGroup
	take := func(ctx context.Context, hits []sluice.Hit, after func()) {
		wg.Go(func() {
			_ = s.Take(ctx, hits, make([]sluice.Result, len(hits)))
			if after != nil {
				after()
			}
		})
	}
	take(context.Background(), []sluice.Hit{{Key: "leader", Limit: sluice.PerHour(5), Cost: 1}}, nil)
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	hits := []sluice.Hit{{Key: "victim", Limit: sluice.PerHour(5), Cost: 1}}
	take(ctx, hits, func() { hits[0].Key, hits[0].Cost = "reused-by-next-request", 3 })
	time.Sleep(250 * time.Millisecond) // the leader is done; the victim's batch is in flight
	cancel()
	wg.Wait()
	time.Sleep(400 * time.Millisecond) // the victim's reply arrives and is split
	reused := redisstore.KeyOf(s, sluice.Hit{Key: "reused-by-next-request", Limit: sluice.PerHour(5)})
	if n := rc.Exists(context.Background(), reused).Val(); n != 0 {
		t.Fatalf("the batch charged the hits its abandoned caller reused")
	}
}

// gatedClient holds each EVALSHA until the test lets it through or the
// call's context ends, then moves the coalescer's clock by rtt, as if the
// round trip had taken that long. An EVALSHA on a key of held waits apart,
// until hold is closed, and moves no clock: it keeps a lane busy.
type gatedClient struct {
	*redis.Client
	clock   *storetest.Clock
	rtt     time.Duration
	entered chan struct{} // a value per EVALSHA that reached the gate
	release chan struct{} // a value lets one EVALSHA through
	held    map[string]bool
	heldIn  chan struct{} // a value per held EVALSHA
	hold    chan struct{}
}

func (c *gatedClient) Process(ctx context.Context, cmd redis.Cmder) error {
	if cmd.Name() != "evalsha" {
		return c.Client.Process(ctx, cmd)
	}
	if key, _ := cmd.Args()[3].(string); c.held[key] {
		c.heldIn <- struct{}{}
		select {
		case <-c.hold:
		case <-ctx.Done():
		}
		return c.Client.Process(ctx, cmd)
	}
	c.entered <- struct{}{}
	select {
	case <-c.release:
	case <-ctx.Done():
	}
	c.clock.Advance(c.rtt)
	return c.Client.Process(ctx, cmd)
}

// A coalescing store sends a call at once while fewer than Lanes calls
// are in flight, and queues it otherwise; when a call returns, its lane
// carries what queued: several requests in one call, or a lone one.
func TestCoalescerKeepsLanesCallsInFlight(t *testing.T) {
	srv := redistest.Start(t)
	rc := newClient(t, srv.Addr)
	forms := &formRecorder{byKey: map[string]int{}}
	rc.AddHook(forms)
	gc := &gatedClient{Client: rc, clock: storetest.NewClock(time.Now()),
		entered: make(chan struct{}, 8), release: make(chan struct{}, 8)}
	s := newStoreWith(t, gc, nil, redisstore.Config{Coalesce: 8, StartupCheckTimeout: -1})
	redisstore.SetCoalesceClock(s, gc.clock.Now) // no time passes: no queue is overdue
	t.Cleanup(func() { close(gc.release) })
	hit := func(key string) []sluice.Hit { return []sluice.Hit{{Key: key, Limit: sluice.PerHour(10), Cost: 1}} }
	// Which held call a release lets through is up to the scheduler, so
	// every call reports on one channel.
	done := make(chan error, 16)
	started := 0
	take := func(key string) {
		started++
		go func() { done <- s.Take(context.Background(), hit(key), make([]sluice.Result, 1)) }()
	}
	finished := func(what string) {
		t.Helper()
		if err := recv(t, done, what); err != nil {
			t.Fatal(err)
		}
		started--
	}
	for i := range redisstore.Lanes {
		take(fmt.Sprint("sent ", i))
		recv(t, gc.entered, "a call with a free lane")
		if q := redisstore.Queued(s); q != 0 {
			t.Fatalf("%d calls queued with %d in flight", q, i)
		}
	}
	gc.release <- struct{}{} // one call returns, with nothing queued: one lane is free
	finished("a released call")
	take("sent again")
	recv(t, gc.entered, "a call with the lane freed")

	take("queued 0")
	take("queued 1")
	waitQueued(t, s, 2)
	select {
	case <-gc.entered:
		t.Fatalf("a call was sent with %d in flight", redisstore.Lanes)
	case <-time.After(50 * time.Millisecond):
	}
	gc.release <- struct{}{} // one call returns; its lane carries both queued calls
	finished("a released call")
	recv(t, gc.entered, "the queued calls' batch")
	if q := redisstore.Queued(s); q != 0 {
		t.Fatalf("%d calls still queued after a lane freed", q)
	}

	take("queued alone")
	waitQueued(t, s, 1)
	gc.release <- struct{}{} // one call returns; its lane carries the lone queued call
	recv(t, gc.entered, "the lone queued call")
	for range redisstore.Lanes {
		gc.release <- struct{}{}
	}
	for started > 0 {
		finished("a call")
	}
	// The clock and four arguments per hit: a batch of two requests (the
	// recorder sees its first key, either request's), or one alone.
	args := func(key string) int { return forms.args(redisstore.KeyOf(s, hit(key)[0])) }
	if got := args("queued 0") + args("queued 1"); got != 9 {
		t.Errorf("the queued calls' batch: sent with %d script arguments, want 9", got)
	}
	if got := args("queued alone"); got != 5 {
		t.Errorf("the lone queued call: sent with %d script arguments, want 5", got)
	}
}

// A call that found every lane busy, and meanwhile saw them all come free
// with nothing queued, sends itself: queued, nobody would send it.
func TestCoalescerCallTakesALaneFreedBeforeItQueued(t *testing.T) {
	s, gc := newGatedStore(t)
	hit := []sluice.Hit{{Key: "k", Limit: sluice.PerHour(10), Cost: 1}}
	done := make(chan error, redisstore.Lanes)
	for range redisstore.Lanes {
		go func() { done <- s.Take(context.Background(), hit, make([]sluice.Result, 1)) }()
		recv(t, gc.entered, "a call with a free lane")
	}
	freed := false // written before the late call reaches the gate
	redisstore.SetBeforeQueue(s, func() {
		for range redisstore.Lanes {
			gc.release <- struct{}{}
		}
		for range redisstore.Lanes {
			select { // on the late call's goroutine: no t.Fatal here
			case err := <-done:
				if err != nil {
					t.Error(err)
				}
			case <-time.After(ceiling / 2): // before the test's own wait gives up
				t.Error("a released call did not return")
				return
			}
		}
		freed = true
	})
	late := make(chan error, 1)
	out := make([]sluice.Result, 1)
	go func() { late <- s.Take(context.Background(), hit, out) }()
	recv(t, gc.entered, "the call that found the lanes freed")
	if q := redisstore.Queued(s); q != 0 || !freed {
		t.Fatalf("%d calls queued (lanes freed first: %v), want the call sent at once", q, freed)
	}
	gc.release <- struct{}{}
	if err := recv(t, late, "the late call"); err != nil {
		t.Fatal(err)
	}
	if want := int64(10 - redisstore.Lanes - 1); !out[0].Allowed || out[0].Remaining != want {
		t.Fatalf("late call: %+v, want it admitted after %d others: %d of 10 remaining", out[0], redisstore.Lanes, want)
	}
}

// A lone call, sent at once on a free lane, runs under its caller's
// context, as without coalescing: cancelling it ends the call at once,
// with an ambiguous error (the script may have run).
func TestCoalescerLoneCallRunsUnderItsCallersContext(t *testing.T) {
	s, gc := newGatedStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Take(ctx, []sluice.Hit{{Key: "k", Limit: sluice.PerHour(10), Cost: 1}}, make([]sluice.Result, 1))
	}()
	recv(t, gc.entered, "the lone call")
	cancel() // the gate is never released: only the cancellation ends the call
	err := recv(t, done, "the cancelled call")
	var se *sluice.StoreError
	if !errors.As(err, &se) || !se.Ambiguous || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled lone call: %#v, want an ambiguous store error wrapping context.Canceled", err)
	}
}

// panickyClient panics in Process while panics is above zero, as a
// faulty hook would.
type panickyClient struct {
	*redis.Client
	panics atomic.Int32
}

func (c *panickyClient) Process(ctx context.Context, cmd redis.Cmder) error {
	if cmd.Name() == "evalsha" && c.panics.Add(-1) >= 0 {
		panic("hook failed")
	}
	return c.Client.Process(ctx, cmd)
}

// A lone call whose client panics still frees its lane: otherwise, once
// every lane was lost so, later calls would queue with nobody to send them.
func TestCoalescerLoneCallFreesItsLaneWhenTheClientPanics(t *testing.T) {
	t.Parallel() // its own redis-server; no package state, no timing
	srv := redistest.Start(t)
	pc := &panickyClient{Client: newClient(t, srv.Addr)}
	pc.panics.Store(redisstore.Lanes)
	s := newStoreWith(t, pc, nil, redisstore.Config{Coalesce: 8, StartupCheckTimeout: -1})
	hit := []sluice.Hit{{Key: "k", Limit: sluice.PerHour(10), Cost: 1}}
	for range redisstore.Lanes {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("the client's panic did not reach the caller")
				}
			}()
			_ = s.Take(context.Background(), hit, make([]sluice.Result, 1))
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), ceiling)
	defer cancel()
	if err := s.Take(ctx, hit, make([]sluice.Result, 1)); err != nil {
		t.Fatalf("a call after the panics: %v, want it decided", err)
	}
}

// newGatedStore returns a coalescing store on its own redis-server whose
// every script call waits at gc's gate.
func newGatedStore(t *testing.T) (*redisstore.Store, *gatedClient) {
	srv := redistest.Start(t)
	gc := &gatedClient{Client: newClient(t, srv.Addr), clock: storetest.NewClock(time.Now()),
		entered: make(chan struct{}, 8), release: make(chan struct{}, 8)}
	s := newStoreWith(t, gc, nil, redisstore.Config{Coalesce: 8, StartupCheckTimeout: -1})
	redisstore.SetCoalesceClock(s, gc.clock.Now) // no time passes: no queue is overdue
	t.Cleanup(func() { close(gc.release) })
	return s, gc
}

// formRecorder is a go-redis hook recording, by its first key, the
// argument count of each script command.
type formRecorder struct {
	mu    sync.Mutex
	byKey map[string]int
}

func (*formRecorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *formRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); cmd.Name() == "evalsha" && len(a) > 3 {
			f.mu.Lock()
			f.byKey[a[3].(string)] = len(a) - 3 - a[2].(int)
			f.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (*formRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (f *formRecorder) args(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.byKey[key]
}

// ceiling bounds every wait of these tests: only a hang reaches it.
const ceiling = 5 * time.Second

func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(ceiling):
		t.Fatalf("%s: nothing after %v", what, ceiling)
		panic("unreachable")
	}
}

// waitQueued waits until n calls wait in s's coalescing queue.
func waitQueued(t *testing.T, s *redisstore.Store, n int) {
	t.Helper()
	for start := time.Now(); redisstore.Queued(s) < n; time.Sleep(time.Millisecond) {
		if time.Since(start) > ceiling {
			t.Fatalf("%d calls queued after %v, want %d", redisstore.Queued(s), ceiling, n)
		}
	}
}

// lateOutcome is what became of the calls of lateMember.
type lateOutcome struct {
	late    error   // the late member's
	others  []error // the members with hours to spare
	charged bool    // the late member's bucket was written
	breaker sluice.BreakerState
}

// lateMember queues a "late" member and three with hours to spare behind a
// leader call held in flight (and calls that keep the other lanes busy). The late member's context expires a second
// from now; the coalescer's clock is set so that when the next batch is
// assembled, after the leader's round trip of an hour, the late member has
// left to go by that clock. One round trip of an hour puts the estimate
// between 0 and an hour, whatever its averaging weight. The breaker opens
// on the first failure it records.
func lateMember(t *testing.T, left time.Duration) lateOutcome {
	const rtt = time.Hour
	srv := redistest.Start(t)
	rc := newClient(t, srv.Addr)
	deadline := time.Now().Add(time.Second)
	clock := storetest.NewClock(deadline.Add(-rtt - left))
	gc := &gatedClient{Client: rc, clock: clock, rtt: rtt,
		entered: make(chan struct{}, 8), release: make(chan struct{}, 8),
		held: map[string]bool{}, heldIn: make(chan struct{}, 8), hold: make(chan struct{})}
	s := newStoreWith(t, gc, nil, redisstore.Config{Coalesce: 8, StartupCheckTimeout: -1,
		Breaker: redisstore.BreakerConfig{Failures: 1}})
	redisstore.SetCoalesceClock(s, clock.Now)
	t.Cleanup(func() { close(gc.release); close(gc.hold) }) // frees whatever a failed test left waiting
	hit := func(key string) []sluice.Hit { return []sluice.Hit{{Key: key, Limit: sluice.PerHour(10), Cost: 1}} }
	take := func(ctx context.Context, key string) <-chan error {
		errc := make(chan error, 1)
		go func() { errc <- s.Take(ctx, hit(key), make([]sluice.Result, 1)) }()
		return errc
	}

	var lanes []string
	for i := range redisstore.Lanes - 1 {
		lanes = append(lanes, fmt.Sprint("lane ", i))
		gc.held[redisstore.KeyOf(s, hit(lanes[i])[0])] = true
	}
	for _, key := range lanes {
		take(context.Background(), key)
		recv(t, gc.heldIn, "a call keeping a lane busy")
	}
	leader := take(context.Background(), "leader")
	recv(t, gc.entered, "the leader's call")
	lateCtx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	late := take(lateCtx, "late")
	spareCtx, cancel := context.WithDeadline(context.Background(), deadline.Add(3*rtt))
	defer cancel()
	others := []<-chan error{take(spareCtx, "a"), take(spareCtx, "b"), take(spareCtx, "c")}
	waitQueued(t, s, 4)

	gc.release <- struct{}{} // the leader's call returns; the next batch is assembled
	if err := recv(t, leader, "the leader"); err != nil {
		t.Fatalf("leader: %v", err)
	}
	var o lateOutcome
	o.late = recv(t, late, "the late member") // before its batch is let through
	gc.release <- struct{}{}
	for _, c := range others {
		o.others = append(o.others, recv(t, c, "a member with time to spare"))
	}
	o.charged = rc.Exists(context.Background(), redisstore.KeyOf(s, hit("late")[0])).Val() != 0
	o.breaker = s.BreakerState()
	return o
}

// checkLeftOut checks that the late member was left out of its batch with
// an unambiguous timeout, and that it cost the others nothing.
func checkLeftOut(t *testing.T, o lateOutcome) {
	t.Helper()
	if !errors.Is(o.late, sluice.ErrTimeout) || sluice.IsAmbiguous(o.late) {
		t.Errorf("late member: %v, want an unambiguous timeout", o.late)
	}
	var se *sluice.StoreError
	if !errors.As(o.late, &se) || se.Op != "redisstore: take" || se.Kind != sluice.ErrTimeout || se.Ambiguous {
		t.Errorf("late member: %#v, want a *sluice.StoreError of kind ErrTimeout, not ambiguous", se)
	}
	if o.charged {
		t.Errorf("the late member's bucket was charged: it was sent")
	}
	for i, err := range o.others {
		if err != nil {
			t.Errorf("member %d with time to spare: %v", i, err)
		}
	}
	if o.breaker != sluice.BreakerClosed {
		t.Errorf("breaker %v: it recorded a failure", o.breaker)
	}
}

// A member whose deadline has passed by the time its batch is assembled,
// though its goroutine has not yet given up, is left out: it would time the
// whole batch out at once.
func TestCoalescedExpiredMemberIsLeftOut(t *testing.T) {
	o := lateMember(t, -time.Second)
	checkLeftOut(t, o)
	if !errors.Is(o.late, context.DeadlineExceeded) {
		t.Errorf("late member: %v, want it to wrap context.DeadlineExceeded", o.late)
	}
}

// A member with less time left than a round trip takes is left out.
func TestCoalescedMemberWithShortBudgetIsLeftOut(t *testing.T) {
	checkLeftOut(t, lateMember(t, time.Millisecond))
}

// The control of the two tests above: a member with time enough by the
// coalescer's clock is sent, and its deadline, the batch's earliest, times
// the whole batch out. So the harness does see a batch sunk by a member.
func TestCoalescedBatchRunsUntilEarliestDeadline(t *testing.T) {
	o := lateMember(t, 2*time.Hour)
	if !errors.Is(o.late, sluice.ErrTimeout) || !sluice.IsAmbiguous(o.late) {
		t.Errorf("late member: %v, want an ambiguous timeout", o.late)
	}
	for i, err := range o.others {
		if !errors.Is(err, sluice.ErrTimeout) || !sluice.IsAmbiguous(err) {
			t.Errorf("member %d: %v, want an ambiguous timeout", i, err)
		}
	}
	if o.breaker != sluice.BreakerOpen {
		t.Errorf("breaker %v, want open", o.breaker)
	}
}

// A call whose context is already done is not sent, even on an idle
// store: it fails at once, unambiguously, and the breaker counts nothing.
func TestTakeWithDoneContext(t *testing.T) {
	t.Parallel() // its own redis-server; no package state, no timing
	srv := redistest.Start(t)
	rc := newClient(t, srv.Addr)
	for _, coalesce := range []int{-1, 8} {
		s := newStoreWith(t, rc, nil, redisstore.Config{Coalesce: coalesce, StartupCheckTimeout: -1,
			Breaker: redisstore.BreakerConfig{Failures: 1}})
		hit := sluice.Hit{Key: fmt.Sprint("k", coalesce), Limit: sluice.PerHour(10), Cost: 1}
		expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		for _, tc := range []struct {
			ctx         context.Context
			kind, cause error
		}{
			{expired, sluice.ErrTimeout, context.DeadlineExceeded},
			{cancelled, sluice.ErrUnavailable, context.Canceled},
		} {
			err := s.Take(tc.ctx, []sluice.Hit{hit}, make([]sluice.Result, 1))
			if !errors.Is(err, tc.kind) || !errors.Is(err, tc.cause) || sluice.IsAmbiguous(err) {
				t.Errorf("Coalesce %d: Take with a done context: %v, want an unambiguous %v wrapping %v", coalesce, err, tc.kind, tc.cause)
			}
		}
		if s.BreakerState() != sluice.BreakerClosed {
			t.Errorf("Coalesce %d: breaker %v: it recorded a failure", coalesce, s.BreakerState())
		}
		if rc.Exists(context.Background(), redisstore.KeyOf(s, hit)).Val() != 0 {
			t.Errorf("Coalesce %d: a call with a done context was sent", coalesce)
		}
	}
}

// With every lane busy, a call arriving when the queue's oldest call has
// waited more than half a round trip sends the queue at once on a spare
// lane, up to half as many lanes again; beyond that, calls queue.
func TestCoalescerSendsAnOverdueQueueOnASpareLane(t *testing.T) {
	const rtt = 80 * time.Millisecond
	srv := redistest.Start(t)
	clock := storetest.NewClock(time.Now())
	gc := &gatedClient{Client: newClient(t, srv.Addr), clock: clock, rtt: rtt,
		entered: make(chan struct{}, 16), release: make(chan struct{}, 16)}
	s := newStoreWith(t, gc, nil, redisstore.Config{Coalesce: 8, StartupCheckTimeout: -1})
	redisstore.SetCoalesceClock(s, clock.Now)
	t.Cleanup(func() { close(gc.release) })
	hit := func(key string) []sluice.Hit { return []sluice.Hit{{Key: key, Limit: sluice.PerHour(10), Cost: 1}} }
	done := make(chan error, 16)
	take := func(key string) {
		go func() { done <- s.Take(context.Background(), hit(key), make([]sluice.Result, 1)) }()
	}
	// One call timed: the estimate is an eighth of its round trip, 10 ms.
	take("timed")
	recv(t, gc.entered, "the first call")
	gc.release <- struct{}{}
	if err := recv(t, done, "the first call"); err != nil {
		t.Fatal(err)
	}
	for i := range redisstore.Lanes {
		take(fmt.Sprint("lane ", i))
		recv(t, gc.entered, "a call with a free lane")
	}
	spares := redisstore.Lanes / 2
	for i := range spares + 1 {
		take(fmt.Sprint("queued ", i))
		waitQueued(t, s, 1)
		take(fmt.Sprint("fresh ", i)) // the queue has not waited: no spare lane
		waitQueued(t, s, 2)
		clock.Advance(5*time.Millisecond + 1) // over half the estimate
		take(fmt.Sprint("late ", i))
		if i == spares { // every spare lane busy
			waitQueued(t, s, 3)
			select {
			case <-gc.entered:
				t.Fatalf("a call was sent with %d lanes and %d spare ones busy", redisstore.Lanes, spares)
			case <-time.After(50 * time.Millisecond):
			}
			break
		}
		recv(t, gc.entered, "the overdue queue's batch on a spare lane")
		if q := redisstore.Queued(s); q != 0 {
			t.Fatalf("%d calls queued after the spare lane took the queue", q)
		}
	}
	for range redisstore.Lanes + spares + 1 {
		gc.release <- struct{}{}
	}
	for range redisstore.Lanes + 3*(spares+1) {
		if err := recv(t, done, "a call"); err != nil {
			t.Fatal(err)
		}
	}
}
