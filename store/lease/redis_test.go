package lease_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/lease"
	"github.com/sluicehq/sluice/store/redisstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// redisClient returns a client of addr with options fit for a limiter.
func redisClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true, DialerRetries: 1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// redisStore returns a Redis store on its own client of addr. With a
// clock, its scripts decide by that clock instead of the server's. Its
// memory of refusals, which reads the real clock, is off: the lease
// store's own, on the test's clock, stands in front of it.
func redisStore(t testing.TB, addr string, clock *storetest.Clock) *redisstore.Store {
	t.Helper()
	c := redisClient(t, addr)
	cfg := redisstore.Config{Logger: quiet, Secret: []byte("test secret"), RememberRefusals: -1, PresenceInterval: -1}
	if clock != nil {
		c.AddHook(clockHook{clock})
		cfg.Clock = clock // calendar boundaries placed on the same clock
	}
	s, err := redisstore.New(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// clockHook makes the Redis store's scripts decide by a test clock: it
// replaces the time argument, the first after the keys.
type clockHook struct{ clock *storetest.Clock }

func (clockHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h clockHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.set(cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook sets the clock of a pipeline's scripts (on a
// cluster the Redis store pipelines a request's per-slot scripts).
func (h clockHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.set(cmd)
		}
		return next(ctx, cmds)
	}
}

func (h clockHook) set(cmd redis.Cmder) {
	if n := cmd.Name(); n == "evalsha" || n == "eval" {
		args := cmd.Args()
		if nkeys, ok := args[2].(int); ok && len(args) > 3+nkeys {
			args[3+nkeys] = h.clock.Now().UnixMicro()
		}
	}
}

// leaseHarnesses returns a factory of conformance harnesses whose stores
// are lease stores, each over its own backing store from backing (its own
// client and connection pool), deciding by the harness's clock.
func leaseHarnesses(backing func(t *testing.T, clock *storetest.Clock) sluice.Store) storetest.Factory {
	return func(t *testing.T) storetest.Harness {
		clock := storetest.NewClock(time.Now())
		cfg := lease.Config{Clock: clock, Default: leaseAll, MaxLease: conformanceK, SweepInterval: -1}
		return storetest.Harness{
			Store:   newStore(t, backing(t, clock), cfg),
			SetTime: clock.Set,
			Atomic:  true,
			Lease:   conformanceK,
			Clients: func(t *testing.T, n int) []sluice.Store {
				stores := make([]sluice.Store, n)
				for i := range stores {
					stores[i] = newStore(t, backing(t, clock), cfg)
				}
				return stores
			},
		}
	}
}

// The conformance suite over a real Redis: several clients are several
// lease stores, each on its own Redis store and connection pool.
func TestConformanceOverRedis(t *testing.T) {
	srv := redistest.Start(t)
	storetest.Run(t, leaseHarnesses(func(t *testing.T, clock *storetest.Clock) sluice.Store {
		return redisStore(t, srv.Addr, clock)
	}))
}

// evalCalls returns how many scripts the server has run.
func evalCalls(t testing.TB, addr string) int64 {
	t.Helper()
	info, err := redistest.Info(addr, "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, cmd := range []string{"cmdstat_evalsha", "cmdstat_eval"} {
		if v, ok := info[cmd]; ok {
			calls, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
			c, err := strconv.ParseInt(calls, 10, 64)
			if err != nil {
				t.Fatalf("%s: %q", cmd, v)
			}
			n += c
		}
	}
	return n
}

// Redis commands per check on a hot key under its limit: about 1/K once
// K has grown, as INFO commandstats counts them.
func TestCommandsPerCheck(t *testing.T) {
	srv := redistest.Start(t)
	const kmax = 64
	s := newStore(t, redisStore(t, srv.Addr, nil), lease.Config{MaxLease: kmax, TTL: time.Minute, SweepInterval: -1}) // no expiry mid-run, however slow the machine
	h := sluice.Hit{Key: "hot", Limit: sluice.PerSecond(100_000), Lease: leased}
	for range 200 { // K grows to its bound
		take(t, s, h)
	}
	before := evalCalls(t, srv.Addr)
	const checks = 20_000
	for range checks {
		take(t, s, h)
	}
	cmds := evalCalls(t, srv.Addr) - before
	perCheck := float64(cmds) / checks
	t.Logf("%d checks, %d scripts: %.4f per check (1/K = %.4f)", checks, cmds, perCheck, 1.0/kmax)
	if perCheck > 1.0/kmax*1.05 {
		t.Fatalf("%.4f Redis commands per check, want ≤ 1/K = %.4f", perCheck, 1.0/kmax)
	}
}

// Drift: 4 instances, each a lease store on its own client, share one
// Redis and one hot key at 100/s with a burst of 100, offered 20 times
// that for 8 s. K ≤ 100/4 = 25, and N × K = 100 is within the 5 % budget
// of burst + 60 s × rate (6,100). The bound asserted:
//
//   - over-admission (the safety property): the instances together admit
//     at most the allowance, burst + rate × elapsed (about 900), plus
//     N × K, plus 50 ms of refill for the edges of the run;
//   - under-admission: at least 3/4 of the allowance less N × K. Under
//     the limit only a starved scheduler leaves tokens unclaimed (a
//     busy 2-core machine can pause the goroutines), so this bound is
//     loose on purpose;
//   - fairness: each instance admits at least 1/4 of its fair share
//     (total / N); the shares themselves are logged.
//
// SLUICE_DRIFT_RUN (a duration, such as 60s) runs it longer, for the
// figure BENCHMARKS.md tables.
func TestDriftFourInstances(t *testing.T) {
	if os.Getenv("SLUICE_LONG") == "" {
		t.Skip("8 s of real time: runs with SLUICE_LONG=1, as .ci/test's long tier sets")
	}
	srv := redistest.Start(t)
	const (
		instances = 4
		rate      = 100
		burst     = 100
		perInst   = 2 // goroutines per instance, each every 4 ms on average: 20× the limit in all
	)
	run := 8 * time.Second
	if v := os.Getenv("SLUICE_DRIFT_RUN"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SLUICE_DRIFT_RUN: %v", err)
		}
		run = d
	}
	limit := sluice.PerSecond(rate).WithBurst(burst)
	k := lease.MaxLease(limit, sluice.TokenBucket, instances, 0.05)
	var admitted [instances]atomic.Int64
	var failed atomic.Int64
	stores := make([]*lease.Store, instances)
	for i := range stores {
		stores[i] = newStore(t, redisStore(t, srv.Addr, nil), lease.Config{Instances: instances})
	}
	before := evalCalls(t, srv.Addr)
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var checks atomic.Int64
	for i, s := range stores {
		for g := range perInst {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Arrivals 2 to 6 ms apart, at random: a fixed tick would
				// let the goroutine whose phase comes first after each
				// refill win every token, with any store.
				rng := rand.New(rand.NewPCG(uint64(i), uint64(g)))
				timer := time.NewTimer(time.Millisecond)
				defer timer.Stop()
				hits := []sluice.Hit{{Key: "drift", Limit: limit, Lease: leased}}
				out := make([]sluice.Result, 1)
				for {
					select {
					case <-stop:
						return
					case <-timer.C:
						timer.Reset(2*time.Millisecond + time.Duration(rng.Int64N(int64(4*time.Millisecond))))
					}
					checks.Add(1)
					if err := s.Take(context.Background(), hits, out); err != nil {
						failed.Add(1)
						continue
					}
					if out[0].Allowed {
						admitted[i].Add(1)
					}
				}
			}()
		}
	}
	time.Sleep(run) // real Redis time is what the bucket refills by
	close(stop)
	wg.Wait()
	elapsed := time.Since(start)
	cmds := evalCalls(t, srv.Addr) - before
	var total int64
	for i := range admitted {
		total += admitted[i].Load()
	}
	allowance := burst + int64(elapsed.Seconds()*rate)
	bound := int64(instances) * k
	slack := int64(rate / 20) // 50 ms of refill: when the run starts and ends
	t.Logf("K = %d, %d instances, %v: admitted %d of an allowance of %d (%+.2f %%), bound ±%d (%.1f %%); per instance %v; %d checks, %d scripts (%.4f per check); %d errors",
		k, instances, elapsed.Round(time.Millisecond), total, allowance, 100*float64(total-allowance)/float64(allowance),
		bound, 100*float64(bound)/float64(allowance), loads(admitted[:]), checks.Load(), cmds, float64(cmds)/float64(checks.Load()), failed.Load())
	if failed.Load() > 0 {
		t.Fatalf("%d checks failed", failed.Load())
	}
	if total > allowance+bound+slack {
		t.Fatalf("admitted %d, want at most the allowance %d + N × K %d + %d", total, allowance, bound, slack)
	}
	if low := allowance*3/4 - bound; total < low {
		t.Fatalf("admitted %d, want at least 3/4 of the allowance %d less N × K %d: %d", total, allowance, bound, low)
	}
	if budget := 0.05 * float64(burst+60*rate); float64(bound) > budget {
		t.Fatalf("the bound N × K = %d is over 5 %% of burst + 60 s × rate (%.0f)", bound, budget)
	}
	for i := range admitted {
		if n := admitted[i].Load(); n < total/instances/4 {
			t.Fatalf("instance %d admitted %d, under 1/4 of its fair share %d", i, n, total/instances)
		}
	}
}

func loads(a []atomic.Int64) []int64 {
	out := make([]int64, len(a))
	for i := range a {
		out[i] = a[i].Load()
	}
	return out
}

// Crash over Redis: an instance dropped without Close loses what its lease
// held (the bucket under-admits by that much); with Close, every unused
// token is back in the Redis bucket.
func TestCrashAndCloseOverRedis(t *testing.T) {
	srv := redistest.Start(t)
	clock := storetest.NewClock(time.Now())
	direct := redisStore(t, srv.Addr, clock)
	for _, closeIt := range []bool{true, false} {
		s, err := lease.New(redisStore(t, srv.Addr, clock), lease.Config{Clock: clock, Instances: 4, DriftBudget: 1, SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		h := sluice.Hit{Key: "crash" + strconv.FormatBool(closeIt), Limit: sluice.PerHour(100), Lease: leased}
		const served = 40
		for range served {
			take(t, s, h)
		}
		held := 100 - served - peek(t, direct, h)
		if held <= 0 || held > 25 {
			t.Fatalf("holding %d, want from 1 to K = 25", held)
		}
		if closeIt {
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := peek(t, direct, h); got != 100-served {
				t.Fatalf("after Close the Redis bucket holds %d, want %d", got, 100-served)
			}
			continue
		}
		if got := peek(t, direct, h); got != 100-served-held {
			t.Fatalf("after a crash the Redis bucket holds %d, want %d (the %d held are lost)", got, 100-served-held, held)
		}
		t.Cleanup(func() { s.Close(context.Background()) })
	}
}

// Redis killed: a leased key keeps serving its lease, with no I/O, until
// the lease expires; then the store's error surfaces (for the rule's
// on_fail). Nothing started is left running once the store and its
// client are closed. Real time: the lease's TTL is 300 ms.
func TestRedisDownServesLeaseThenFails(t *testing.T) {
	srv := redistest.Start(t)
	noLeak(t, func() {
		c := redisClient(t, srv.Addr)
		shared, err := redisstore.New(c, redisstore.Config{Logger: quiet, Secret: []byte("test secret"), RememberRefusals: -1, PresenceInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		s, err := lease.New(shared, lease.Config{TTL: 300 * time.Millisecond, Logger: quiet, SweepInterval: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		h := []sluice.Hit{{Key: "down", Limit: sluice.PerMinute(60_000), Lease: leased}}
		out := make([]sluice.Result, 1)
		for range 40 { // K grows past 20
			if err := s.Take(context.Background(), h, out); err != nil {
				t.Fatal(err)
			}
		}
		srv.Kill()
		start := time.Now()
		served := 0
		for range 5 {
			if err := s.Take(context.Background(), h, out); err != nil {
				break
			}
			served++
		}
		if served != 5 && time.Since(start) < 250*time.Millisecond {
			t.Fatalf("served %d of 5 from the lease with Redis down, before it expired", served)
		}
		time.Sleep(350 * time.Millisecond) // past the TTL
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err = s.Take(ctx, h, out)
		if !errors.Is(err, sluice.ErrUnavailable) && !errors.Is(err, sluice.ErrTimeout) {
			t.Fatalf("after the lease expired: %v, want the store's ErrUnavailable or ErrTimeout", err)
		}
		if err := s.Close(ctx); err != nil && !errors.Is(err, sluice.ErrUnavailable) && !errors.Is(err, sluice.ErrTimeout) {
			t.Fatalf("Close: %v", err)
		}
		shared.Close(context.Background())
		c.Close()
	})
}
