package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
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

// TestCluster runs the cluster tests that share one 3+3 cluster.
func TestCluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, redistest.ClusterOptions{Args: redistest.DebugArgs(t)})
	t.Run("Clients", func(t *testing.T) { testClusterClients(t, c) })
	t.Run("SlotsAreRedis", func(t *testing.T) { testClusterSlots(t, c) })
	t.Run("NoDoubleExecution", func(t *testing.T) { testClusterNoDoubleExecution(t, c) })
	t.Run("CrossSlotAllOrNothing", func(t *testing.T) { testClusterCrossSlot(t, c) })
	t.Run("CrossSlotRace", func(t *testing.T) { testClusterCrossSlotRace(t, c) })
	t.Run("CrossSlotCoalesced", func(t *testing.T) { testClusterCrossSlotCoalesced(t, c) })
	t.Run("CrossSlotBurst", func(t *testing.T) { testClusterCrossSlotBurst(t, c) })
	t.Run("CrossSlotBurstInstances", func(t *testing.T) { testClusterCrossSlotBurstInstances(t, c) })
	t.Run("ScarceFirst", func(t *testing.T) { testClusterScarceFirst(t, c) })
	t.Run("Partial", func(t *testing.T) { testClusterPartial(t, c) })
}

// testClusterClients: a UniversalClient that is a cluster client works; a
// cluster client hidden behind a wrapper, or a plain client on a cluster
// node, is found out by the start-up check and every call fails with a
// configuration error the breaker does not count.
func testClusterClients(t *testing.T, c *redistest.Cluster) {
	ctx := context.Background()
	hits := []sluice.Hit{
		{Key: "clients-a", Limit: sluice.PerMinute(5), Cost: 1},
		{Key: "clients-b", Limit: sluice.PerMinute(5), Cost: 1},
		{Key: "clients-c", Limit: sluice.PerMinute(5), Cost: 1},
	}
	out := make([]sluice.Result, len(hits))

	u := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: c.Addrs(), ContextTimeoutEnabled: true})
	defer u.Close()
	s := newStore(t, u, nil)
	if err := s.Take(ctx, hits, out); err != nil || !sluice.Admitted(hits, out) {
		t.Fatalf("UniversalClient on the cluster: %+v %v", out, err)
	}

	type wrapped struct{ *redis.ClusterClient }
	for _, tc := range []struct {
		name   string
		client redisstore.Client
	}{
		{"wrapped cluster client", wrapped{newClusterClient(t, c.Addrs())}},
		{"plain client on a node", newClient(t, c.Nodes[0].Addr)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncBuffer
			st, err := redisstore.New(tc.client, redisstore.Config{AllowUnsafeClient: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close(context.Background())
			redisstore.WaitStartupCheck(st)
			for range 10 {
				err = st.Take(ctx, hits, out)
				if !errors.Is(err, redisstore.ErrUnsupportedClient) || sluice.IsAmbiguous(err) {
					t.Fatalf("Take = %v, want an unambiguous ErrUnsupportedClient", err)
				}
			}
			if st.BreakerState() != sluice.BreakerClosed {
				t.Fatalf("breaker %v after configuration errors", st.BreakerState())
			}
			if !strings.Contains(logs.String(), "cluster_enabled:1") {
				t.Fatalf("nothing logged: %q", logs.String())
			}
		})
	}
}

// testClusterSlots: the store's slot of every key kind is the cluster's.
func testClusterSlots(t *testing.T, c *redistest.Cluster) {
	s := newStore(t, newClusterClient(t, c.Addrs()), nil)
	for i := range 50 {
		for _, alg := range []sluice.Algorithm{sluice.TokenBucket, sluice.SlidingWindow, sluice.FixedWindow, sluice.SlidingLog} {
			h := sluice.Hit{Key: "slot" + strconv.Itoa(i), Algorithm: alg, Limit: sluice.PerMinute(5)}
			k := redisstore.KeyOf(s, h)
			if got, want := redisstore.SlotOf(k), c.Slot(k); got != want {
				t.Fatalf("slot of %q: %d, the cluster says %d", k, got, want)
			}
			// Colocated by a group, every bucket lands in the group's slot.
			h.Group = "user" + strconv.Itoa(i%7)
			g := sluice.Hit{Key: "other" + strconv.Itoa(i), Limit: sluice.PerSecond(3), Group: h.Group}
			kh, kg := redisstore.KeyOf(s, h), redisstore.KeyOf(s, g)
			if kh == k || c.Slot(kh) != c.Slot(kg) {
				t.Fatalf("grouped keys %q and %q: slots %d and %d", kh, kg, c.Slot(kh), c.Slot(kg))
			}
		}
	}
}

// testClusterNoDoubleExecution: the key's master is busy longer than the
// client's read timeout. The store's script ran exactly once on it (INFO
// commandstats), consumed at most its cost, and the error is an ambiguous
// timeout. The same command sent as an ordinary command runs more than
// once: the busy master provokes go-redis's re-sends.
func testClusterNoDoubleExecution(t *testing.T, c *redistest.Cluster) {
	ctx := context.Background()
	opt := clusterOptions(c.Addrs())
	opt.ReadTimeout = 100 * time.Millisecond
	client := redis.NewClusterClient(opt)
	defer client.Close()
	s := newStoreWith(t, client, nil, redisstore.Config{Breaker: redisstore.BreakerConfig{Disabled: true}})
	redisstore.WaitStartupCheck(s)
	hit := sluice.Hit{Key: "busy", Limit: sluice.PerHour(100), Cost: 1}
	key := redisstore.KeyOf(s, hit)
	master := c.MasterOf(c.Slot(key))
	out := make([]sluice.Result, 1)
	if err := s.Take(ctx, []sluice.Hit{hit}, out); err != nil {
		t.Fatal(err)
	}
	scripts := func() int64 { return cmdCalls(t, master.Addr, "evalsha") + cmdCalls(t, master.Addr, "eval") }

	busy := func(run func()) int64 {
		before := scripts()
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = redistest.Do(master.Addr, "DEBUG", "SLEEP", "0.4")
		}()
		waitBusy(t, master.Addr, 20*time.Millisecond)
		run()
		<-done
		time.Sleep(600 * time.Millisecond) // every re-send, if any, has landed
		return scripts() - before
	}

	var err error
	runs := busy(func() { err = s.Take(ctx, []sluice.Hit{hit}, out) })
	if !errors.Is(err, sluice.ErrTimeout) || !sluice.IsAmbiguous(err) {
		t.Fatalf("Take on a busy master: %v, want an ambiguous timeout", err)
	}
	if runs != 1 {
		t.Fatalf("the store's script ran %d times for one Take, want 1", runs)
	}
	if got := peek(t, s, hit).Remaining; got != 98 {
		t.Fatalf("remaining %d after two takes of 1, want 98", got)
	}

	ordinary := busy(func() {
		_ = client.Do(ctx, "evalsha", redisstore.TakeSHA(), 1, key, "", int(sluice.TokenBucket)|redisstore.ModeLast,
			hit.Limit.IntervalMicros(), hit.Limit.Capacity(), 1).Err()
	})
	t.Logf("script runs for one call on a busy master: store %d, ordinary command %d", runs, ordinary)
	if ordinary < 2 {
		t.Fatalf("an ordinary command ran %d times: the busy master provoked no re-send, so the test proves nothing", ordinary)
	}
}

// waitBusy returns once the server at addr has stopped answering (a DEBUG
// SLEEP has begun): a PING gets no reply within quiet. The longer quiet,
// the surer a loaded machine's slow answer is not mistaken for a sleep,
// and the less of the sleep is left.
func waitBusy(t testing.TB, addr string, quiet time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = conn.Write([]byte("PING\r\n"))
		_ = conn.SetReadDeadline(time.Now().Add(quiet))
		_, err = conn.Read(make([]byte, 16))
		conn.Close()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return
		}
	}
	t.Fatalf("%s never became busy", addr)
}

// cmdCalls returns how many times the server at addr ran cmd.
func cmdCalls(t testing.TB, addr, cmd string) int64 {
	t.Helper()
	info, err := redistest.Info(addr, "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	rest, ok := strings.CutPrefix(info["cmdstat_"+cmd], "calls=")
	if !ok {
		return 0
	}
	n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
	return n
}

// hitsInSlots returns n hits of alg with limit, whose keys lie in n
// different slots, their masters as varied as the cluster allows.
func hitsInSlots(t *testing.T, s *redisstore.Store, c *redistest.Cluster, n int, prefix string, alg sluice.Algorithm, limit sluice.Limit) []sluice.Hit {
	t.Helper()
	var hits []sluice.Hit
	seen := map[string]bool{}
	for i := 0; len(hits) < n && i < 1000; i++ {
		h := sluice.Hit{Key: prefix + strconv.Itoa(i), Algorithm: alg, Limit: limit, Cost: 1}
		m := c.MasterOf(redisstore.SlotOf(redisstore.KeyOf(s, h)))
		if m == nil || seen[m.Addr] && len(seen) < 3 {
			continue
		}
		seen[m.Addr] = true
		hits = append(hits, h)
	}
	return hits
}

// testClusterCrossSlot: for every algorithm, a request refused in one slot
// leaves the other slots' raw state exactly as it was (read back with
// DUMP), and reports for the passing hits what is left without consuming.
func testClusterCrossSlot(t *testing.T, c *redistest.Cluster) {
	ctx := context.Background()
	for _, alg := range []sluice.Algorithm{sluice.TokenBucket, sluice.SlidingWindow, sluice.FixedWindow, sluice.SlidingLog} {
		t.Run(alg.String(), func(t *testing.T) {
			clock := storetest.NewClock(time.Now().Truncate(time.Hour).Add(17 * time.Minute))
			s := newStore(t, newClusterClient(t, c.Addrs()), clock)
			hits := hitsInSlots(t, s, c, 3, fmt.Sprintf("aon-%v-%d-", alg, time.Now().UnixNano()), alg, sluice.PerHour(5))
			hits[2].Limit = sluice.PerHour(1) // the refusing rule
			out := make([]sluice.Result, 3)
			for i := range hits { // every bucket in use
				if err := s.Take(ctx, hits[i:i+1], out[:1]); err != nil || !out[0].Allowed {
					t.Fatalf("first take of %d: %+v %v", i, out[0], err)
				}
			}
			dump := func() []string {
				var d []string
				for _, h := range hits {
					k := redisstore.KeyOf(s, h)
					v, err := redistest.DoString(c.MasterOf(redisstore.SlotOf(k)).Addr, "DUMP", k)
					if err != nil || v == "" {
						t.Fatalf("DUMP %s: %q %v", k, v, err)
					}
					d = append(d, v)
				}
				return d
			}
			before := dump()
			clock.Advance(time.Second)
			if err := s.Take(ctx, hits, out); err != nil {
				t.Fatal(err)
			}
			if sluice.Admitted(hits, out) || !out[0].Allowed || !out[1].Allowed || out[2].Allowed {
				t.Fatalf("refused request: %+v", out)
			}
			for i := range 2 {
				if out[i].Remaining != 4 || out[i].Receipt != (sluice.Receipt{}) {
					t.Fatalf("hit %d passed in a refused request: %+v, want 4 remaining without consuming and no receipt", i, out[i])
				}
			}
			after := dump()
			for i := range hits {
				if !bytes.Equal([]byte(before[i]), []byte(after[i])) {
					t.Fatalf("hit %d's raw state changed by a refused request", i)
				}
			}
		})
	}
}

// testClusterCrossSlotRace: many requests of two rules, per user and
// global, in different slots, race on a store per goroutine. They admit at
// least 97 % of what a single node admits for the same requests, and no
// bucket admits more than its allowance (the clock stands still: the
// allowance is the burst).
func testClusterCrossSlotRace(t *testing.T, c *redistest.Cluster) {
	single := redistest.Start(t)
	const (
		goroutines = 16
		requests   = 150 // per goroutine
		users      = 40
		userBurst  = 5
		global     = 100
	)
	run := func(newClient func() redisstore.Client) (admitted int64, perUser []int64) {
		clock := storetest.NewClock(time.Now())
		prefix := strconv.FormatInt(time.Now().UnixNano(), 36)
		perUser = make([]int64, users)
		var wg sync.WaitGroup
		var n atomic.Int64
		for g := range goroutines {
			s := newStore(t, newClient(), clock)
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(g), 7))
				out := make([]sluice.Result, 2)
				for range requests {
					u := int(float64(users) * rng.Float64() * rng.Float64()) // skewed
					hits := []sluice.Hit{
						{Key: prefix + "user" + strconv.Itoa(u), Limit: sluice.PerHour(userBurst), Cost: 1},
						{Key: prefix + "global", Limit: sluice.PerHour(global), Cost: 1},
					}
					if err := s.Take(context.Background(), hits, out); err != nil {
						t.Error(err)
						return
					}
					if sluice.Admitted(hits, out) {
						n.Add(1)
						atomic.AddInt64(&perUser[u], 1)
					}
				}
			}()
		}
		wg.Wait()
		return n.Load(), perUser
	}
	one, _ := run(func() redisstore.Client { return newClient(t, single.Addr) })
	many, perUser := run(func() redisstore.Client { return newClusterClient(t, c.Addrs()) })
	t.Logf("%d requests of 2 rules: single node admitted %d, cluster %d (%.1f %%)", goroutines*requests, one, many, 100*float64(many)/float64(one))
	if many > global {
		t.Fatalf("the cluster admitted %d, above the global allowance %d", many, global)
	}
	for u, n := range perUser {
		if n > userBurst {
			t.Fatalf("user %d admitted %d, above its allowance %d", u, n, userBurst)
		}
	}
	if float64(many) < 0.97*float64(one) {
		t.Fatalf("the cluster admitted %d, under 97 %% of the single node's %d", many, one)
	}
}

// testClusterCrossSlotCoalesced: goroutines sharing one coalescing store,
// with one lane per slot so that their calls queue and share batches, send
// requests of two rules, per user and global, in different slots. No
// bucket admits more than its allowance, and every bucket has exactly its
// allowance left less what admitted requests took (the clock stands
// still): what a refused request took in the other slot was given back
// exactly, no more, no less. Script calls carrying the global bucket's key
// more than once show that the requests' global parts were batched.
func testClusterCrossSlotCoalesced(t *testing.T, c *redistest.Cluster) {
	const (
		goroutines = 32
		requests   = 100 // per goroutine
		users      = 40
		userBurst  = 5
		global     = 100
	)
	clock := storetest.NewClock(time.Now())
	client := newClusterClient(t, c.Addrs())
	batches := &batchCounter{}
	client.AddHook(cmdHook(batches.count))
	s := newStoreWith(t, client, clock, redisstore.Config{CoalesceLanes: 1})
	// A prefix under which no user's bucket shares the global bucket's
	// slot, so that every request is cross-slot (a run's random prefix
	// collides once in a few hundred runs).
	base := "coalesced-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	var prefix string
	userHit := func(u int) sluice.Hit {
		return sluice.Hit{Key: prefix + "user" + strconv.Itoa(u), Limit: sluice.PerHour(userBurst), Cost: 1}
	}
	var globalHit sluice.Hit
	for attempt := 0; prefix == ""; attempt++ {
		prefix = base + strconv.Itoa(attempt) + "-"
		globalHit = sluice.Hit{Key: prefix + "global", Limit: sluice.PerHour(global), Cost: 1}
		globalSlot := redisstore.SlotOf(redisstore.KeyOf(s, globalHit))
		for u := range users {
			if redisstore.SlotOf(redisstore.KeyOf(s, userHit(u))) == globalSlot {
				prefix = ""
				break
			}
		}
	}
	batches.key = redisstore.KeyOf(s, globalHit)
	perUser := make([]int64, users)
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 11))
			out := make([]sluice.Result, 2)
			for range requests {
				u := int(float64(users) * rng.Float64() * rng.Float64()) // skewed
				hits := []sluice.Hit{userHit(u), globalHit}
				if err := s.Take(context.Background(), hits, out); err != nil {
					t.Error(err)
					return
				}
				if sluice.Admitted(hits, out) {
					admitted.Add(1)
					atomic.AddInt64(&perUser[u], 1)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d requests of 2 rules: %d admitted; %d script calls carried %d global parts", goroutines*requests, admitted.Load(), batches.calls.Load(), batches.parts.Load())
	if t.Failed() {
		return
	}
	if n := admitted.Load(); n > global || n == 0 {
		t.Fatalf("admitted %d, want 1 to %d (the global allowance)", n, global)
	}
	if got, want := peek(t, s, globalHit).Remaining, global-admitted.Load(); got != want {
		t.Fatalf("the global bucket has %d left, want %d: its allowance less the admitted requests' takes", got, want)
	}
	for u, n := range perUser {
		if n > userBurst {
			t.Fatalf("user %d admitted %d, above its allowance %d", u, n, userBurst)
		}
		if got, want := peek(t, s, userHit(u)).Remaining, userBurst-n; got != want {
			t.Fatalf("user %d's bucket has %d left, want %d: its allowance less its admitted requests' takes", u, got, want)
		}
	}
	if f := redisstore.RefundFailures(s); f != 0 {
		t.Fatalf("%d refunds failed", f)
	}
	if batches.calls.Load() == 0 {
		t.Fatal("no script call carried two requests' global parts: they were not batched")
	}
}

// batchCounter counts (a go-redis hook as cmdHook(b.count)) the take script calls that
// carry key more than once (batches of several requests' hits on it), and
// how many times they carry it.
type batchCounter struct {
	key          string
	calls, parts atomic.Int64
}

func (b *batchCounter) count(cmd redis.Cmder) {
	args := cmd.Args() // evalsha, digest, key count, keys..., arguments...
	if len(args) < 3 || args[1] != redisstore.TakeSHA() {
		return
	}
	nkeys, _ := args[2].(int)
	n := 0
	for _, k := range args[3:min(3+nkeys, len(args))] {
		if k == b.key {
			n++
		}
	}
	if n > 1 {
		b.calls.Add(1)
		b.parts.Add(int64(n))
	}
}
