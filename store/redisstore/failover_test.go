package redisstore_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// Failover under load: bounded load over keys in every slot and one hot
// key, a master (or the Sentinel-managed primary) killed by SIGKILL.

// The budget is larger than production's 50 ms so that a machine shared by
// other work, or the race detector, does not turn healthy calls into
// timeouts: the test is about failover, not speed. Calls to a dead node
// fail at once (connection refused) whatever the budget.
const (
	failoverBudget = time.Second // each call's deadline
	failoverSlack  = 250 * time.Millisecond
	loadWorkers    = 4
	hotRate        = 1000 // the hot key's limit per second (burst 1000)
)

// call is one Take of the load.
type call struct {
	at       time.Time
	took     time.Duration
	victim   bool // its key is served by the killed node
	hot      bool
	admitted bool
	err      error
}

// loadKeys are the load's hits: ordinary keys with a limit they never
// reach, and the hot key.
func loadKeys() (keys []sluice.Hit, hot sluice.Hit) {
	for i := range 600 {
		keys = append(keys, sluice.Hit{Key: "load" + strconv.Itoa(i), Limit: sluice.PerSecond(100000), Cost: 1})
	}
	return keys, sluice.Hit{Key: "hot", Limit: sluice.PerSecond(hotRate), Cost: 1}
}

// runLoad runs loadWorkers goroutines of one-hit calls on s, one in ten on
// the hot key, until stop is closed, and returns every call.
func runLoad(s sluice.Store, keys []sluice.Hit, hot sluice.Hit, victim func(sluice.Hit) bool, stop <-chan struct{}) []call {
	var mu sync.Mutex
	var calls []call
	var wg sync.WaitGroup
	victims := map[string]bool{}
	for _, k := range append(slices.Clone(keys), hot) {
		victims[k.Key] = victim(k)
	}
	for w := range loadWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			out := make([]sluice.Result, 1)
			var mine []call
			for {
				select {
				case <-stop:
					mu.Lock()
					calls = append(calls, mine...)
					mu.Unlock()
					return
				default:
				}
				h, isHot := keys[rng.IntN(len(keys))], false
				if rng.IntN(10) == 0 {
					h, isHot = hot, true
				}
				ctx, cancel := context.WithTimeout(context.Background(), failoverBudget)
				start := time.Now()
				err := s.Take(ctx, []sluice.Hit{h}, out)
				took := time.Since(start)
				cancel()
				mine = append(mine, call{at: start, took: took, victim: victims[h.Key], hot: isHot, admitted: err == nil && out[0].Allowed, err: err})
				if err != nil {
					time.Sleep(time.Millisecond) // failing calls return at once: don't spin
				}
			}
		}()
	}
	wg.Wait()
	slices.SortFunc(calls, func(a, b call) int { return a.at.Compare(b.at) })
	return calls
}

// checkRecovery asserts that the victims decided again within want of the
// promotion: on a quiet machine (SLUICE_TIMING=1, .ci/long's timing tier);
// elsewhere within 2.5 s, before the load's last half second.
func checkRecovery(t *testing.T, recovery, want time.Duration) {
	t.Helper()
	if os.Getenv("SLUICE_TIMING") == "" {
		want = 2500 * time.Millisecond
	}
	if recovery > want {
		t.Errorf("victims failed until %v after the promotion, want within %v", recovery.Round(time.Millisecond), want)
	}
}

// checkFailover asserts what every failover run must show and returns the
// victims' recovery after promoted: the start of the last failed victim
// call (0 if none failed after promoted).
func checkFailover(t *testing.T, calls []call, killed, promoted time.Time, hotCap int64) time.Duration {
	t.Helper()
	var healthy, healthyErrs, victim, victimErrs, hotAdmitted int64
	var worst time.Duration
	var lastVictimErr time.Time
	var firstErr error
	for _, c := range calls {
		worst = max(worst, c.took)
		if c.hot && c.admitted {
			hotAdmitted++
		}
		if !c.victim {
			healthy++
			if c.err != nil {
				healthyErrs++
				if firstErr == nil {
					firstErr = c.err
				}
			}
			continue
		}
		victim++
		if c.err != nil {
			victimErrs++
			lastVictimErr = c.at
		}
	}
	recovery := lastVictimErr.Sub(promoted)
	elapsed := calls[len(calls)-1].at.Sub(calls[0].at)
	// The hot key admits at most its burst plus its refill over the run,
	// plus what asynchronous replication lost with the killed node: the
	// writes of at most the last replication round trip, bounded here by
	// 50 ms of its rate.
	hotBound := hotCap + int64(elapsed.Seconds()*hotRate) + hotRate/20
	t.Logf("%d calls over %v: healthy %d (%d errors), victim %d (%d errors); slowest %v; promotion %v after the kill; victims' last failure %v after promotion; hot key admitted %d (bound %d)",
		len(calls), elapsed.Round(time.Millisecond), healthy, healthyErrs, victim, victimErrs, worst.Round(time.Millisecond),
		promoted.Sub(killed).Round(time.Millisecond), recovery.Round(time.Millisecond), hotAdmitted, hotBound)
	if worst > failoverBudget+failoverSlack {
		t.Errorf("a call took %v, over the budget %v + %v", worst, failoverBudget, failoverSlack)
	}
	if healthyErrs > 0 {
		t.Errorf("%d calls on healthy nodes failed, the first with %v", healthyErrs, firstErr)
	}
	if victimErrs == 0 {
		t.Errorf("no call on the killed node's keys failed: the kill was not observed")
	}
	if hotAdmitted > hotBound {
		t.Errorf("the hot key admitted %d, above its bound %d", hotAdmitted, hotBound)
	}
	return max(recovery, 0)
}

// TestClusterFailoverUnderLoad kills the master of the hot key's slot
// under load. Calls on the other masters never fail; calls on the killed
// master's slots fail (their rules' on_fail decides) until its replica is
// promoted, and decide normally within a second after that.
func TestClusterFailoverUnderLoad(t *testing.T) {
	t.Parallel()
	for _, coalesce := range []int{-1, 64} {
		t.Run("coalesce="+strconv.Itoa(coalesce), func(t *testing.T) {
			t.Parallel()
			c := redistest.StartCluster(t, redistest.ClusterOptions{})
			opt := clusterOptions(c.Addrs())
			opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = failoverBudget, failoverBudget, failoverBudget
			client := redis.NewClusterClient(opt)
			defer client.Close()
			s := newStoreWith(t, client, nil, redisstore.Config{Coalesce: coalesce})
			redisstore.WaitStartupCheck(s)
			keys, hot := loadKeys()
			victimSlots := map[int]bool{}
			hotSlot := redisstore.SlotOf(redisstore.KeyOf(s, hot))
			master := c.MasterOf(hotSlot)
			inVictim := func(h sluice.Hit) bool {
				slot := redisstore.SlotOf(redisstore.KeyOf(s, h))
				if c.MasterOf(slot) == master {
					victimSlots[slot] = true
					return true
				}
				return false
			}
			stop := make(chan struct{})
			var calls []call
			done := make(chan struct{})
			victims := map[string]bool{}
			for _, k := range append(slices.Clone(keys), hot) {
				victims[k.Key] = inVictim(k)
			}
			go func() {
				defer close(done)
				calls = runLoad(s, keys, hot, func(h sluice.Hit) bool { return victims[h.Key] }, stop)
			}()
			time.Sleep(time.Second)
			killed := time.Now()
			master.Kill()
			c.WaitFailover(hotSlot, 20*time.Second)
			promoted := time.Now()
			time.Sleep(3 * time.Second)
			close(stop)
			<-done
			recovery := checkFailover(t, calls, killed, promoted, hotRate)
			t.Logf("victim slots (%d of the load's) resumed %v after promotion", len(victimSlots), recovery.Round(time.Millisecond))
			checkRecovery(t, recovery, time.Second)
		})
	}
}

// TestSentinelFailoverUnderLoad kills the Sentinel-managed primary under
// load: calls fail (on_fail decides) until the sentinels switch to the
// replica, then decide normally within about half a second (the breaker's
// open time); the promoted replica lacks the script, which is reloaded;
// events and logs name the new primary.
func TestSentinelFailoverUnderLoad(t *testing.T) {
	t.Parallel()
	ss := redistest.StartSentinel(t)
	client := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:            redistest.MasterName,
		SentinelAddrs:         ss.Addrs(),
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
		DialerRetries:         1,
		DialTimeout:           failoverBudget,
		ReadTimeout:           failoverBudget,
		WriteTimeout:          failoverBudget,
		// Warm connections, as recommended: after the switch the pool
		// refills them on the new primary, whose dials tell the store.
		MinIdleConns: 4,
	})
	defer client.Close()
	s := newStoreWith(t, client, nil, redisstore.Config{})
	redisstore.WaitStartupCheck(s)
	keys, hot := loadKeys()
	old, err := ss.Primary()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]sluice.Result, 1)
	if err := s.Take(context.Background(), []sluice.Hit{hot}, out); err != nil {
		t.Fatal(err)
	}
	if got := redisstore.Endpoint(s); got != old {
		t.Fatalf("endpoint %q, want the primary %s", got, old)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	var calls []call
	go func() {
		defer close(done)
		calls = runLoad(s, keys, hot, func(sluice.Hit) bool { return true }, stop)
	}()
	time.Sleep(time.Second)
	// Redis before 7.0 replicates SCRIPT LOAD: make sure the replica
	// lacks the script, on every version, as a replica restored from a
	// snapshot would.
	if _, err := redistest.Do(ss.Data[1].Addr, "SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	ss.Data[0].Kill()
	promotedAddr := ss.WaitSwitch(old, 30*time.Second)
	switched := time.Now()
	time.Sleep(3 * time.Second)
	close(stop)
	<-done
	recovery := checkFailover(t, calls, killed, switched, hotRate)
	t.Logf("decisions resumed %v after the switch; script reloads %d; endpoint %q", recovery.Round(time.Millisecond), s.ScriptReloads(), redisstore.Endpoint(s))
	// The primary's breaker, opened by the failures, lets a probe through
	// every OpenFor (500 ms by default): that bounds the recovery, plus
	// slack for a machine shared with the race detector or other work.
	checkRecovery(t, recovery, 500*time.Millisecond+250*time.Millisecond) // the breaker's 500 ms open time + 250 ms
	if got := redisstore.Endpoint(s); got != promotedAddr {
		t.Errorf("endpoint %q after the switch, want the new primary %s", got, promotedAddr)
	}
	// The promoted replica lacked the script (flushed above): the store
	// loaded it there, when it set up its connections to the new primary
	// or on NOSCRIPT.
	if ok, err := newClient(t, promotedAddr).ScriptExists(context.Background(), redisstore.TakeSHA().(string)).Result(); err != nil || !ok[0] {
		t.Errorf("the promoted primary has no take script (%v, %v)", ok, err)
	}
	var se *sluice.StoreError
	for _, c := range calls {
		if c.err != nil && !errors.As(c.err, &se) {
			t.Fatalf("a failure that is not a StoreError: %v", c.err)
		}
	}
}
