package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/redisstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// TestDifferentialBatched is the differential replay with batching on:
// each step sends up to 8 random requests (1–3 hits each; one time in three
// plain token-bucket requests only, the script's short form) through a
// coalescing store with one lane, the first held in flight until the
// others have queued behind it, so the others go in one script call, in
// queue order. Memstore decides the same requests one by one in that
// order; every request must get memstore's answer, each hit its own.
func TestDifferentialBatched(t *testing.T) {
	srv := redistest.Start(t)
	seeds, steps := uint64(4), 120
	if n, err := strconv.Atoi(os.Getenv("SLUICE_DIFF_SEEDS")); err == nil { // a longer run: SLUICE_DIFF_SEEDS=200
		seeds, steps = uint64(n), 500
	}
	batches := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			clock := storetest.NewClock(time.Now().Truncate(time.Hour))
			mem := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1})
			defer mem.Close(context.Background())
			hc := &holdClient{Client: newClient(t, srv.Addr), in: make(chan struct{}, 2), out: make(chan struct{}, 2)}
			red := newStoreWith(t, hc, clock, redisstore.Config{Coalesce: 64, CoalesceLanes: 1, RememberRefusals: -1, StartupCheckTimeout: -1})
			redisstore.SetCoalesceClock(red, clock.Now) // no time passes: no queue is overdue
			rng := rand.New(rand.NewPCG(seed, 0xba7c4))
			prefix := fmt.Sprintf("batch%d-%d:", seed, time.Now().UnixNano())
			var taken []sluice.Refund
			for step := range steps {
				clock.Advance(randomStep(rng))
				if len(taken) > 0 && rng.IntN(5) == 0 {
					i := rng.IntN(len(taken))
					r := taken[i]
					taken = append(taken[:i], taken[i+1:]...)
					r.Units = rng.Int64N(r.Receipt.Taken + 1)
					if errA, errB := mem.Refund(context.Background(), []sluice.Refund{r}), red.Refund(context.Background(), []sluice.Refund{r}); errA != nil || errB != nil {
						t.Fatalf("step %d: refund errors %v / %v for %+v", step, errA, errB, r)
					}
					continue
				}
				reqs := make([][]sluice.Hit, 1+rng.IntN(8))
				for i := range reqs {
					reqs[i] = batchHits(rng, prefix)
				}
				outB := takeBatched(t, red, hc, reqs)
				if len(reqs) > 2 {
					batches++
				}
				for i, hits := range reqs {
					outA := make([]sluice.Result, len(hits))
					if err := mem.Take(context.Background(), hits, outA); err != nil {
						t.Fatalf("step %d: memstore: %v", step, err)
					}
					compare(t, fmt.Sprintf("step %d request %d of %d", step, i, len(reqs)), hits, outA, outB[i], red)
					taken = appendTaken(taken, hits, outB[i])
				}
			}
		})
	}
	if !t.Failed() && batches == 0 {
		t.Error("no step sent a batch")
	}
}

// batchHits returns one request of randomHits, or one time in three a
// request of plain token-bucket hits (shadow ones among them) unless it
// carries a penalty.
func batchHits(rng *rand.Rand, prefix string) []sluice.Hit {
	hits := randomHits(rng, prefix)
	if rng.IntN(3) != 0 || hits[0].Block > 0 { // a penalty's key always carries it
		return hits
	}
	for i := range hits {
		m := ruleMix[rng.IntN(2)]
		hits[i] = sluice.Hit{Key: hits[i].Key, Limit: m.limit, Cost: int64(rng.IntN(int(m.limit.Capacity()) + 2)),
			Shadow: rng.IntN(5) == 0}
	}
	return hits
}

// takeBatched decides reqs on s, a coalescing store with one lane on hc:
// the first request is held in flight until the others have queued, one
// after the other, behind it; then it is let through, and its lane sends
// the others in one call.
func takeBatched(t *testing.T, s *redisstore.Store, hc *holdClient, reqs [][]sluice.Hit) [][]sluice.Result {
	t.Helper()
	out := make([][]sluice.Result, len(reqs))
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	take := func(i int) {
		out[i] = make([]sluice.Result, len(reqs[i]))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Take(context.Background(), reqs[i], out[i])
		}()
	}
	hc.hold.Store(true)
	take(0)
	recv(t, hc.in, "the first request's script call")
	hc.hold.Store(false)
	for i := 1; i < len(reqs); i++ {
		take(i)
		waitQueued(t, s, i)
	}
	hc.out <- struct{}{}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d of %d: %v", i, len(reqs), err)
		}
	}
	return out
}

// holdClient holds an EVALSHA sent while hold is set until the test lets
// it through: it keeps the store's one lane busy.
type holdClient struct {
	*redis.Client
	hold atomic.Bool
	in   chan struct{} // a value per EVALSHA held
	out  chan struct{} // a value lets the held one through
}

func (c *holdClient) Process(ctx context.Context, cmd redis.Cmder) error {
	if cmd.Name() == "evalsha" && c.hold.Load() {
		c.in <- struct{}{}
		<-c.out
	}
	return c.Client.Process(ctx, cmd)
}
