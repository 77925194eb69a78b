package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// A node killed under a steady stream of checks: the checks it serves must
// fail at once, unsent and unambiguous, rather than wait their budget, and
// everything the store reports about it must name it by its address. Each
// test runs two stores side by side on the same servers: one on the
// client redisstore builds, one on a client built by hand with only the
// settings the package documentation requires (go-redis's defaults
// otherwise: five dial attempts 100 ms apart).

const (
	// deadBudget is each check's deadline: production's default.
	deadBudget = 50 * time.Millisecond
	// deadPause is each worker's pause after a check: a steady stream,
	// not a saturating one, so that few checks are in flight when the
	// node dies.
	deadPause   = 2 * time.Millisecond
	deadWorkers = 8
	// deadWaited is how long a failed check may take and still count as
	// failed at once: far above a refused dial (well under a
	// millisecond), even on a machine busy with the race detector and
	// other work (tens of milliseconds at worst: 33 ms seen under the race
	// detector in CI), below the budget that a check that waits spends.
	deadWaited = 45 * time.Millisecond
	// deadMaxWaited bounds the checks of the dead node that waited more
	// than deadWaited from the kill to the promotion: at most one per
	// worker, the check each may have had on its way to the node when it
	// died, inside go-redis before the first dial to it failed (go-redis
	// retries a failed dial 100 ms later by default, and on Cluster sends
	// a pipeline whose connection failed again after a backoff, past the
	// budget). A node that is not failed at once makes checks wait their
	// budget until its breaker opens, and again at each of its probes.
	deadMaxWaited = deadWorkers
	// deadMaxLate bounds the checks of the dead node that waited more than
	// deadWaited among those that started a budget after its first failed
	// check, when every check that was already on its way to it has
	// failed: none should; two are slack for a busy machine.
	deadMaxLate = 2
	// deadResume bounds how long after the sentinels name the new primary
	// checks may still fail: a set-up waits at most 100 ms between
	// attempts; a breaker opened on the new primary would add its
	// OpenFor, 500 ms.
	deadResume = 400 * time.Millisecond
)

// endpointEvents records the endpoints a store names in its events.
type endpointEvents struct {
	mu    sync.Mutex
	names []string // "breaker <endpoint> from->to", "reload <endpoint>", "healed <endpoint>"
}

func (e *endpointEvents) BreakerChanged(endpoint string, from, to sluice.BreakerState) {
	e.add(fmt.Sprintf("breaker %s %v->%v", endpoint, from, to))
}

func (e *endpointEvents) ScriptReloaded(endpoint string) { e.add("reload " + endpoint) }

func (e *endpointEvents) StateHealed(endpoint string) { e.add("healed " + endpoint) }

func (e *endpointEvents) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.names = append(e.names, s)
}

func (e *endpointEvents) all() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.names)
}

// deadStore is a store under test, with what it reported.
type deadStore struct {
	name   string
	s      *redisstore.Store
	events *endpointEvents
	logs   *records
	calls  []call
}

// newDeadStore returns a store on client with default settings, reporting
// to its own events and logger, once it is ready.
func newDeadStore(t *testing.T, name string, client redisstore.Client) *deadStore {
	t.Helper()
	d := &deadStore{name: name, events: &endpointEvents{}, logs: &records{}}
	s, err := redisstore.New(client, redisstore.Config{
		Secret: []byte("test secret"), Events: d.events, Logger: slog.New(d.logs), PresenceInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	d.s = s
	return d
}

// checkNames fails t when an event or a log record of d names an endpoint
// that is not one of addrs, the nodes' host:port addresses; want lists the
// kinds of event ("breaker", "reload") that must have been reported at
// least once.
func (d *deadStore) checkNames(t *testing.T, addrs []string, want ...string) {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range d.events.all() {
		kind, rest, _ := strings.Cut(e, " ")
		name, _, _ := strings.Cut(rest, " ")
		seen[kind] = true
		if !isAddr(name) || !slices.Contains(addrs, name) {
			t.Errorf("%s: event %q names %q, want one of the nodes' addresses %v", d.name, e, name, addrs)
		}
	}
	for _, k := range want {
		if !seen[k] {
			t.Errorf("%s: no %s event; events: %q", d.name, k, d.events.all())
		}
	}
	for _, r := range d.logs.atLeast(slog.LevelDebug) {
		_, v, ok := strings.Cut(r, ` endpoint="`)
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(v, `"`)
		if !isAddr(name) || !slices.Contains(addrs, name) {
			t.Errorf("%s: log record %q names the endpoint %q, want one of the nodes' addresses %v", d.name, r, name, addrs)
		}
	}
}

// isAddr reports whether s is host:port with a numeric port.
func isAddr(s string) bool {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return false
	}
	_, err = strconv.Atoi(port)
	return err == nil
}

// deadKeys returns n hits with a limit the load never reaches.
func deadKeys(n int) []sluice.Hit {
	keys := make([]sluice.Hit, n)
	for i := range keys {
		keys[i] = sluice.Hit{Key: "dead" + strconv.Itoa(i), Limit: sluice.PerSecond(100000), Cost: 1}
	}
	return keys
}

// load runs deadWorkers goroutines of checks on each store until stop is
// closed, and keeps each store's checks in the order they started. Every
// other check has two hits (on Redis Cluster, mostly in two slots: one
// script per slot in one pipeline). victim reports whether a check's hits
// include one the killed node serves.
func load(stores []*deadStore, keys []sluice.Hit, victim func([]sluice.Hit) bool, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for si, d := range stores {
		var mu sync.Mutex
		for w := range deadWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(si), uint64(w)))
				out := make([]sluice.Result, 2)
				var mine []call
				defer func() {
					mu.Lock()
					d.calls = append(d.calls, mine...)
					mu.Unlock()
				}()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					hits := []sluice.Hit{keys[rng.IntN(len(keys))], keys[rng.IntN(len(keys))]}[:1+i%2]
					ctx, cancel := context.WithTimeout(context.Background(), deadBudget)
					start := time.Now()
					err := d.s.Take(ctx, hits, out[:len(hits)])
					took := time.Since(start)
					cancel()
					mine = append(mine, call{at: start, took: took, victim: victim(hits), admitted: err == nil && out[0].Allowed, err: err})
					time.Sleep(deadPause)
				}
			}()
		}
	}
	wg.Wait()
	for _, d := range stores {
		slices.SortFunc(d.calls, func(a, b call) int { return a.at.Compare(b.at) })
	}
}

// deadReport sums up the checks of a store that started in a span of time:
// the dead node's (victim) or the others'.
type deadReport struct {
	checks, failed, waited, ambiguous int
	waitedFor                         time.Duration // the sum of the waits of the checks that waited
	p50, max                          time.Duration // of the failed checks
	kinds                             map[string]int
	firstErr                          error
}

func (r deadReport) String() string {
	var kinds []string
	for k, n := range r.kinds {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	slices.Sort(kinds)
	return fmt.Sprintf("%d checks, %d failed (p50 %v, max %v; %s), %d ambiguous; %d waited more than %v before failing, %v in all",
		r.checks, r.failed, r.p50, r.max, strings.Join(kinds, ", "), r.ambiguous, r.waited, deadWaited, r.waitedFor.Round(time.Millisecond))
}

func report(calls []call, victim bool, from, to time.Time) deadReport {
	r := deadReport{kinds: map[string]int{}}
	var took []time.Duration
	for _, c := range calls {
		if c.victim != victim || c.at.Before(from) || !c.at.Before(to) {
			continue
		}
		r.checks++
		if c.err == nil {
			continue
		}
		r.failed++
		if r.firstErr == nil {
			r.firstErr = c.err
		}
		took = append(took, c.took)
		if c.took > deadWaited {
			r.waited++
			r.waitedFor += c.took
		}
		if sluice.IsAmbiguous(c.err) {
			r.ambiguous++
		}
		r.kinds[errKind(c.err)]++
	}
	if len(took) > 0 {
		slices.Sort(took)
		r.p50, r.max = took[len(took)/2].Round(100*time.Microsecond), took[len(took)-1].Round(100*time.Microsecond)
	}
	return r
}

// errKind names err's sluice kind.
func errKind(err error) string {
	for _, k := range []error{sluice.ErrBreakerOpen, sluice.ErrTimeout, sluice.ErrClusterDown, sluice.ErrUnavailable} {
		if errors.Is(err, k) {
			return strings.TrimPrefix(k.Error(), "sluice: ")
		}
	}
	return err.Error()
}

// checkFailedAtOnce asserts what d's checks of the dead node show between
// the kill and the promotion, and from a second after the promotion.
func (d *deadStore) checkFailedAtOnce(t *testing.T, killed, promoted time.Time) {
	t.Helper()
	dead := report(d.calls, true, killed, promoted)
	after := report(d.calls, true, promoted.Add(time.Second), promoted.Add(2*time.Second))
	t.Logf("%s: kill to promotion: the dead node's %v", d.name, dead)
	t.Logf("%s: 1-2 s after the promotion: %v", d.name, after)
	i := slices.IndexFunc(d.calls, func(c call) bool { return c.victim && c.err != nil && !c.at.Before(killed) })
	if i < 0 {
		t.Fatalf("%s: no check of the dead node failed: the kill was not observed", d.name)
	}
	first := d.calls[i].at
	late := report(d.calls, true, first.Add(deadBudget), promoted)
	t.Logf("%s: first failure %v after the kill; from a budget later: %v", d.name, first.Sub(killed).Round(100*time.Microsecond), late)
	// How long they took, that none was sent (a busy machine may see a
	// kill late, and send), and that checks decide again within a second
	// of the promotion hold only on a quiet machine: asserted with
	// SLUICE_TIMING=1 (.ci/long's timing tier), logged above otherwise.
	if os.Getenv("SLUICE_TIMING") == "" {
		if after.checks == after.failed {
			t.Errorf("%s: 1-2 s after the promotion: %v, want checks decided again (first error: %v)", d.name, after, after.firstErr)
		}
		return
	}
	// Nothing is sent to a node found unreachable, so none of its checks is
	// ambiguous.
	if late.ambiguous > 0 {
		t.Errorf("%s: the dead node's checks from a budget after its first failure: %v, want none ambiguous", d.name, late)
	}
	// Its checks fail unavailable (or their breaker open), none waiting
	// out its budget.
	if late.failed != late.kinds["store unavailable"]+late.kinds["circuit breaker open"] {
		t.Errorf("%s: the dead node's checks from a budget after its first failure: %v, want them all unavailable or refused by the breaker", d.name, late)
	}
	if dead.waited > deadMaxWaited {
		t.Errorf("%s: %d checks of the dead node waited more than %v before failing (%v in all), want at most %d: a node found unreachable must fail the next checks at once",
			d.name, dead.waited, deadWaited, dead.waitedFor.Round(time.Millisecond), deadMaxWaited)
	}
	if late.waited > deadMaxLate {
		t.Errorf("%s: %d checks of the dead node that started a budget after its first failure waited more than %v before failing (%v in all), want at most %d",
			d.name, late.waited, deadWaited, late.waitedFor.Round(time.Millisecond), deadMaxLate)
	}
	if after.checks == 0 || after.failed > 0 {
		t.Errorf("%s: 1-2 s after the promotion: %v, want every check decided (first error: %v)", d.name, after, after.firstErr)
	}
}

// TestSentinelDeadPrimaryFailsAtOnce kills the Sentinel-managed primary by
// pid under a steady stream of checks: from the kill until the sentinels
// switch to the replica, checks fail at once instead of waiting their
// budget; a second after the switch they all decide again; events and log
// records name the primaries by address, not the client's placeholder.
func TestSentinelDeadPrimaryFailsAtOnce(t *testing.T) {
	t.Parallel()
	ss := redistest.StartSentinel(t)
	built, err := redisstore.NewFailoverClient(redistest.MasterName, ss.Addrs()...)
	if err != nil {
		t.Fatal(err)
	}
	defer built.Close()
	byHand := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: redistest.MasterName, SentinelAddrs: ss.Addrs(), MaxRetries: -1, ContextTimeoutEnabled: true,
	})
	defer byHand.Close()
	stores := []*deadStore{newDeadStore(t, "NewFailoverClient", built), newDeadStore(t, "by hand", byHand)}
	old, err := ss.Primary()
	if err != nil {
		t.Fatal(err)
	}
	keys := deadKeys(200)
	// The promoted replica lacks the scripts, as one restored from a
	// snapshot would (Redis before 7.0 replicates SCRIPT LOAD).
	if _, err := redistest.Do(ss.Data[1].Addr, "SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		load(stores, keys, func([]sluice.Hit) bool { return true }, stop)
	}()
	time.Sleep(500 * time.Millisecond)
	killed := time.Now()
	ss.Data[0].Kill()
	promoted := ss.WaitSwitch(old, 30*time.Second)
	switched := time.Now()
	time.Sleep(2 * time.Second)
	close(stop)
	<-done
	t.Logf("switch %v after the kill", switched.Sub(killed).Round(time.Millisecond))

	for _, d := range stores {
		d.checkFailedAtOnce(t, killed, switched)
		// The new primary decides as soon as the store has connections
		// to it: its breaker does not open on what the old one failed.
		var last time.Time
		for _, c := range d.calls {
			if c.err != nil && c.at.After(last) {
				last = c.at
			}
		}
		t.Logf("%s: the last check failed %v after the switch", d.name, last.Sub(switched).Round(time.Millisecond))
		if resumed := last.Sub(switched); resumed > deadResume && os.Getenv("SLUICE_TIMING") != "" {
			t.Errorf("%s: checks failed until %v after the switch, want within %v (the set-up's 100 ms pause between attempts, and slack)", d.name, resumed.Round(time.Millisecond), deadResume)
		}
		// A script reload on the new primary: flushed, it lacks them.
		if _, err := redistest.Do(promoted, "SCRIPT", "FLUSH"); err != nil {
			t.Fatal(err)
		}
		if err := d.s.Take(context.Background(), keys[:1], make([]sluice.Result, 1)); err != nil {
			t.Fatalf("%s: %v", d.name, err)
		}
		d.checkNames(t, []string{old, promoted}, "breaker", "reload")
	}
}

// TestClusterDeadMasterFailsAtOnce kills a Redis Cluster master by pid
// under a steady stream of checks over every master's slots, one hit or
// two: from the kill until its replica is promoted, the checks of the dead
// master's slots fail at once instead of waiting their budget, and checks
// of the other masters alone never fail; a second after the promotion all
// decide again; events and log records name the masters by address.
func TestClusterDeadMasterFailsAtOnce(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, redistest.ClusterOptions{})
	nodes := c.Addrs()
	built, err := redisstore.NewClusterClient(nodes...)
	if err != nil {
		t.Fatal(err)
	}
	defer built.Close()
	byHand := redis.NewClusterClient(&redis.ClusterOptions{Addrs: nodes, ContextTimeoutEnabled: true})
	defer byHand.Close()
	stores := []*deadStore{newDeadStore(t, "NewClusterClient", built), newDeadStore(t, "by hand", byHand)}
	keys := deadKeys(300)
	slot := redisstore.SlotOf(redisstore.KeyOf(stores[0].s, keys[0]))
	master := c.MasterOf(slot)
	replica := replicaOf(t, c, master)
	victims := map[string]bool{}
	for _, k := range keys {
		victims[k.Key] = c.MasterOf(redisstore.SlotOf(redisstore.KeyOf(stores[0].s, k))) == master
	}
	// The promoted replica lacks the scripts.
	if _, err := redistest.Do(replica.Addr, "SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		load(stores, keys, func(hits []sluice.Hit) bool {
			return slices.ContainsFunc(hits, func(h sluice.Hit) bool { return victims[h.Key] })
		}, stop)
	}()
	time.Sleep(500 * time.Millisecond)
	killed := time.Now()
	master.Kill()
	newMaster := c.WaitFailover(slot, 20*time.Second)
	promoted := time.Now()
	time.Sleep(2 * time.Second)
	close(stop)
	<-done
	t.Logf("promotion %v after the kill", promoted.Sub(killed).Round(time.Millisecond))

	for _, d := range stores {
		d.checkFailedAtOnce(t, killed, promoted)
		healthy := report(d.calls, false, d.calls[0].at, promoted.Add(2*time.Second))
		t.Logf("%s: the other masters' checks: %v", d.name, healthy)
		// On a busy machine a check of a healthy master may time out (the
		// process, not Redis, was slow), and enough such timeouts open that
		// master's breaker, which then refuses its checks until it probes
		// the master back; nothing else may fail it. On a quiet machine
		// (the timing tier) none may fail.
		tolerated := healthy.kinds["store timeout"]
		if tolerated > 0 {
			tolerated += healthy.kinds["circuit breaker open"]
		}
		if bad := healthy.failed - tolerated; healthy.failed > 0 && (bad > 0 || os.Getenv("SLUICE_TIMING") != "") {
			t.Errorf("%s: %d checks of the other masters alone failed, the first with %v", d.name, healthy.failed, healthy.firstErr)
		}
		// A script reload on the new master: flushed, it lacks them.
		if _, err := redistest.Do(newMaster.Addr, "SCRIPT", "FLUSH"); err != nil {
			t.Fatal(err)
		}
		if err := d.s.Take(context.Background(), keys[:1], make([]sluice.Result, 1)); err != nil {
			t.Fatalf("%s: %v", d.name, err)
		}
		d.checkNames(t, nodes, "breaker", "reload")
	}
}

// replicaOf returns the running node that replicates master.
func replicaOf(t *testing.T, c *redistest.Cluster, master *redistest.Server) *redistest.Server {
	t.Helper()
	for _, n := range c.Live() {
		repl, err := redistest.Info(n.Addr, "replication")
		if err == nil && repl["role"] == "slave" && repl["master_port"] == strconv.Itoa(master.Port) {
			return n
		}
	}
	t.Fatalf("no replica of %s", master.Addr)
	return nil
}

// TestServerClosingConnectionsIsNotAnOutage: the server closes the store's
// connections while it stays up (CLIENT KILL, as an idle timeout or a proxy
// may): the checks made until new connections are set up fail at once,
// unambiguously, and then decide again; the breaker, which such a short
// gap says nothing about, stays closed.
func TestServerClosingConnectionsIsNotAnOutage(t *testing.T) {
	srv := redistest.Start(t)
	client, err := redisstore.NewClient(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	d := newDeadStore(t, "single node", client)
	hit := []sluice.Hit{{Key: "closed", Limit: sluice.PerSecond(100000), Cost: 1}}
	take := func() (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), deadBudget)
		defer cancel()
		start := time.Now()
		err := d.s.Take(ctx, hit, make([]sluice.Result, 1))
		return time.Since(start), err
	}
	for range 20 {
		if _, err := take(); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 3 {
		if _, err := redistest.Do(srv.Addr, "CLIENT", "KILL", "TYPE", "normal"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		failed, ambiguous := 0, 0
		for {
			took, err := take()
			if err == nil {
				break
			}
			failed++
			if sluice.IsAmbiguous(err) {
				ambiguous++
			}
			if errors.Is(err, sluice.ErrBreakerOpen) {
				t.Fatalf("round %d: the breaker opened (%v): connections the server closed are not an outage", round, err)
			}
			if !errors.Is(err, sluice.ErrUnavailable) || took > deadWaited {
				t.Fatalf("round %d: a check failed after %v with %v, want ErrUnavailable at once", round, took, err)
			}
			if time.Since(start) > 5*time.Second { // a ceiling against hangs
				t.Fatalf("round %d: no check decided 5 s after the server closed the connections; the last failed with %v", round, err)
			}
			time.Sleep(100 * time.Microsecond)
		}
		t.Logf("round %d: decided again %v after the connections were closed; %d checks failed meanwhile, %d of them ambiguously (they met a closed connection)",
			round, time.Since(start).Round(100*time.Microsecond), failed, ambiguous)
	}
	if st := d.s.BreakerState(); st != sluice.BreakerClosed {
		t.Errorf("breaker %v, want closed", st)
	}
	if ev := d.events.all(); len(ev) > 0 {
		t.Errorf("events %q, want none", ev)
	}
}
