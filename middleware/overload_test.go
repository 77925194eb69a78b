package middleware_test

import (
	"context"
	"fmt"
	"github.com/sluicehq/sluice/decide"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/faultproxy"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/admin"
	"github.com/sluicehq/sluice/store/lease"
	"github.com/sluicehq/sluice/store/redisstore"
)

// floodFor is how long the flood tests flood: 2 s, or 5 s in the long tier.
func floodFor() time.Duration {
	if os.Getenv("SLUICE_LONG") != "" {
		return 5 * time.Second
	}
	return 2 * time.Second
}

// flooded is what a flood offered and what got through.
type flooded struct {
	offered, admitted atomic.Int64
	mu                sync.Mutex
	bad               []string // responses that break the contract
}

func (f *flooded) fail(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bad) < 5 {
		f.bad = append(f.bad, fmt.Sprintf(format, args...))
	}
}

// flood sends requests to every url from perURL goroutines each, back to
// back over keep-alive connections, for d, and checks each answer: a 200,
// or a 429 with Retry-After, Cache-Control and the RateLimit field.
// header, when given, names the client by a header (name, value(i)).
func flood(t *testing.T, urls []string, perURL int, d time.Duration, header string, value func(i int) string) *flooded {
	t.Helper()
	f := &flooded{}
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for _, url := range urls {
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: perURL}}
		t.Cleanup(client.CloseIdleConnections)
		for g := range perURL {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; time.Now().Before(stop); i += perURL {
					req, _ := http.NewRequest(http.MethodGet, url, nil)
					if header != "" {
						req.Header.Set(header, value(i))
					}
					resp, err := client.Do(req)
					if err != nil {
						f.fail("%v", err)
						return
					}
					resp.Body.Close()
					f.offered.Add(1)
					switch resp.StatusCode {
					case http.StatusOK:
						f.admitted.Add(1)
					case http.StatusTooManyRequests:
						if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 {
							f.fail("429 with Retry-After %q", resp.Header.Get("Retry-After"))
						}
						if resp.Header.Get("RateLimit") == "" || resp.Header.Get("Cache-Control") != "no-store" {
							f.fail("429 without its fields: %v", resp.Header)
						}
					default:
						f.fail("status %d", resp.StatusCode)
					}
				}
			}()
		}
	}
	wg.Wait()
	for _, b := range f.bad {
		t.Error(b)
	}
	return f
}

// scriptCalls returns how many scripts the servers at addrs ran: the
// store's decisions (the instance count uses plain commands).
func scriptCalls(t *testing.T, addrs []string) int64 {
	n, _ := scriptStats(t, addrs)
	return n
}

// scriptStats returns how many scripts the servers at addrs ran, and the
// microseconds of CPU they spent in them.
func scriptStats(t *testing.T, addrs []string) (calls int64, usec int64) {
	t.Helper()
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		info, err := c.Info(context.Background(), "commandstats").Result()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_eval")
			if !ok || !(strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, "sha:")) {
				continue
			}
			_, rest, _ = strings.Cut(rest, ":")
			fields := map[string]int64{}
			for _, kv := range strings.Split(rest, ",") {
				k, v, _ := strings.Cut(kv, "=")
				fields[k], _ = strconv.ParseInt(v, 10, 64)
			}
			calls += fields["calls"] - fields["failed_calls"] - fields["rejected_calls"]
			usec += fields["usec"]
		}
	}
	return calls, usec
}

// instances starts n servers, each the middleware on its own store from
// newStore, limiting set.
func instances(t *testing.T, n int, set *rules.Set, newStore func() sluice.Store) []string {
	urls := make([]string, n)
	for i := range urls {
		h := middleware.Limit(newStore(), set, decide.WithBudget(time.Second), decide.WithLogger(quietLogger()))
		urls[i] = serve(t, h, &okHandler{}).URL
	}
	return urls
}

// redisStoreOn returns a Redis store on its own client of addr, with cfg.
func redisStoreOn(t *testing.T, client redisstore.Client, cfg redisstore.Config) *redisstore.Store {
	t.Helper()
	cfg.Logger = quietLogger()
	s, err := redisstore.New(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func singleClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true, DialerRetries: 1})
	t.Cleanup(func() { c.Close() })
	return c
}

func clusterClient(t *testing.T, addrs []string) *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true, DialerRetries: 1})
	t.Cleanup(func() { c.Close() })
	return c
}

// One client at many times its limit flooding four instances: what is
// admitted is what the limit refills over the flood, as without the
// memory of refusals, while the script calls Redis runs are bounded by
// time, whatever the flood offers (at full speed, at most one per 100
// requests offered), on a single node, on a cluster and through leases.
func TestFloodCostsRedisAlmostNothing(t *testing.T) {
	limit := sluice.PerMinute(100)
	plain := rules.MustNew(perIP(limit)) // every request comes from 127.0.0.1
	leasedRule := perIP(limit)
	leasedRule.Lease = sluice.LeasePolicy{Enabled: true}
	leased := rules.MustNew(leasedRule)

	single := redistest.Start(t)
	cases := []struct {
		name  string
		set   *rules.Set
		addrs func() []string
		store func(addrs []string) sluice.Store
		drift int64 // what the instances' leases may hold beyond the limit
	}{
		{"single node", plain, func() []string { return []string{single.Addr} }, func(a []string) sluice.Store {
			return redisStoreOn(t, singleClient(t, a[0]), redisstore.Config{})
		}, 0},
		{"cluster", plain, func() []string {
			return redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1}).Addrs()
		}, func(a []string) sluice.Store {
			return redisStoreOn(t, clusterClient(t, a), redisstore.Config{})
		}, 0},
		{"leases", leased, func() []string { return []string{single.Addr} }, func(a []string) sluice.Store {
			s, err := lease.New(redisStoreOn(t, singleClient(t, a[0]), redisstore.Config{Prefix: "leased:"}), lease.Config{Instances: 4, Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close(context.Background()) })
			return s
		}, 4 * lease.MaxLease(limit, sluice.TokenBucket, 4, 0.05)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addrs := tc.addrs()
			urls := instances(t, 4, tc.set, func() sluice.Store { return tc.store(addrs) })
			// Use the burst up: the flood meets an empty bucket.
			for i := 0; ; i++ {
				if resp := get(t, http.DefaultClient, urls[i%4]); resp.StatusCode == http.StatusTooManyRequests {
					break
				}
				if i > 2*int(limit.Capacity())+int(tc.drift) {
					t.Fatalf("no 429 after %d requests", i)
				}
			}
			before := scriptCalls(t, addrs)
			d := floodFor()
			start := time.Now()
			f := flood(t, urls, 4, d, "", nil)
			elapsed := time.Since(start)
			calls := scriptCalls(t, addrs) - before

			refill := float64(limit.Rate) * elapsed.Seconds() / limit.Period.Seconds()
			admitted, offered := f.admitted.Load(), f.offered.Load()
			t.Logf("%v: %d offered, %d admitted (the limit refilled %.1f), %d script calls (%.4f per offered request)",
				elapsed.Round(time.Millisecond), offered, admitted, refill, calls, float64(calls)/float64(offered))
			if hi := int64(math.Ceil(refill)) + 1 + tc.drift; admitted > hi {
				t.Errorf("admitted %d, want at most %d", admitted, hi)
			}
			if lo := int64(refill) - 1; admitted < lo {
				t.Errorf("admitted %d, want at least %d: refusals remembered past their retry time", admitted, lo)
			}
			// The flood decides the offered count, not the calls: each of
			// the 16 connections may find a remembered refusal expired
			// once per RetryAfter (the limit's emission interval), plus
			// the calls that admitted.
			interval := limit.Period / time.Duration(limit.Rate)
			if bound := 16*(int64(elapsed/interval)+1) + admitted; calls > bound {
				t.Errorf("%d script calls, want at most %d whatever the flood offers", calls, bound)
			}
			// At full speed (the long tier, no race detector) that is at
			// most 1 call per 100 requests offered.
			if os.Getenv("SLUICE_LONG") != "" && !raceEnabled && calls*100 > offered {
				t.Errorf("%d script calls for %d requests offered, want at most 1 per 100", calls, offered)
			}
		})
	}
}

// An operator's reset on one instance reaches every instance within the
// time a refusal is remembered (Config.RememberRefusals, 1 s by default):
// each refused the client from memory before; each admits it again after.
func TestResetReachesEveryInstance(t *testing.T) {
	srv := redistest.Start(t)
	set := rules.MustNew(perIP(sluice.PerHour(5))) // after the reset, one for each instance
	stores := make([]sluice.Store, 4)
	for i := range stores {
		stores[i] = redisStoreOn(t, singleClient(t, srv.Addr), redisstore.Config{})
	}
	i := 0
	urls := instances(t, 4, set, func() sluice.Store { i++; return stores[i-1] })
	for _, want := range []int{200, 200, 200, 200, 200} {
		if resp := get(t, http.DefaultClient, urls[0]); resp.StatusCode != want {
			t.Fatalf("status %d, want %d", resp.StatusCode, want)
		}
	}
	for _, u := range urls { // every instance remembers the refusal
		for range 3 {
			if resp := get(t, http.DefaultClient, u); resp.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("status %d, want 429", resp.StatusCode)
			}
		}
	}
	ops, err := admin.New(stores[0], set)
	if err != nil {
		t.Fatal(err)
	}
	opsSrv := httptest.NewServer(ops)
	defer opsSrv.Close()
	resp, err := http.Post(opsSrv.URL+"/reset", "application/json", strings.NewReader(`{"rule":"per-ip","identity":"127.0.0.1"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("reset: %s", resp.Status)
	}
	reset := time.Now()
	const bound = time.Second // Config.RememberRefusals' default
	for n, u := range urls {
		for {
			if resp := get(t, http.DefaultClient, u); resp.StatusCode == http.StatusOK {
				t.Logf("instance %d admits the client %v after the reset", n, time.Since(reset).Round(time.Millisecond))
				break
			}
			if n == 0 {
				t.Fatal("the instance that reset still refuses the client")
			}
			if time.Since(reset) > bound+500*time.Millisecond {
				t.Fatalf("instance %d still refuses the client %v after the reset", n, time.Since(reset))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// Many abusers, each at ten times its limit: each is admitted exactly its
// allowance, and the memory of refusals spares Redis the rest. The figures
// against the memory off are logged.
func TestManyAbusers(t *testing.T) {
	srv := redistest.Start(t)
	identities := 1000
	if os.Getenv("SLUICE_LONG") != "" {
		identities = 10000
	}
	set := rules.MustNew(rules.Rule{Name: "per-client", Key: keyfunc.Header("X-Client"), Limit: sluice.PerHour(1)})
	var calls, usec [2]int64
	var offered [2]int64
	// Remembered a minute (not the default second), so that a slow run
	// does not learn refusals again: the figure is what the memory spares.
	for i, remember := range []time.Duration{time.Minute, -1} {
		prefix := fmt.Sprintf("abusers%d-%d:", i, time.Now().UnixNano())
		store := redisStoreOn(t, singleClient(t, srv.Addr), redisstore.Config{Prefix: prefix, RememberRefusals: remember})
		h := middleware.Limit(store, set, decide.WithBudget(time.Second), decide.WithLogger(quietLogger()))(&okHandler{})
		callsBefore, usecBefore := scriptStats(t, []string{srv.Addr})
		for round := range 10 { // each identity 10 times its allowance of 1
			for id := range identities {
				req := httptest.NewRequest(http.MethodGet, "/", nil)
				req.Header.Set("X-Client", strconv.Itoa(id))
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				offered[i]++
				want := http.StatusTooManyRequests
				if round == 0 {
					want = http.StatusOK
				}
				if rec.Code != want {
					t.Fatalf("round %d identity %d: status %d, want %d", round, id, rec.Code, want)
				}
			}
		}
		c, u := scriptStats(t, []string{srv.Addr})
		calls[i], usec[i] = c-callsBefore, u-usecBefore
	}
	t.Logf("%d identities × 10: script calls per offered request %.3f remembering, %.3f not (%.2f×); Redis CPU per offered request %.2f µs remembering, %.2f µs not (%.2f×)",
		identities, float64(calls[0])/float64(offered[0]), float64(calls[1])/float64(offered[1]), float64(calls[0])/float64(calls[1]),
		float64(usec[0])/float64(offered[0]), float64(usec[1])/float64(offered[1]), float64(usec[0])/float64(usec[1]))
	// One call to admit each identity, one to learn its refusal: 2 of 10.
	if calls[0]*10 > calls[1]*3 {
		t.Errorf("%d script calls remembering refusals, %d not: want at most 3 in 10", calls[0], calls[1])
	}
}

// A store slower than the budget still limits: each instance decides on
// its share of the limit (the limit over the two instances the stores
// count), every request is answered within the budget and some slack, and
// decisions go back to Redis within a second of Redis being fast again.
func TestSlowStoreStillLimits(t *testing.T) {
	srv := redistest.Start(t)
	px := faultproxy.Start(t, srv.Addr)
	limit := sluice.PerMinute(100)
	set := rules.MustNew(perIP(limit)) // on_fail: local, the default
	stores := make([]*redisstore.Store, 2)
	handlers := make([]http.Handler, 2)
	for i := range stores {
		stores[i] = redisStoreOn(t, singleClient(t, px.Addr), redisstore.Config{PresenceInterval: 100 * time.Millisecond})
		handlers[i] = middleware.Limit(stores[i], set, decide.WithLogger(quietLogger()))(&okHandler{})
	}
	deadline := time.Now().Add(5 * time.Second)
	for stores[0].Instances() != 2 || stores[1].Instances() != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the stores count %d and %d instances, want 2", stores[0].Instances(), stores[1].Instances())
		}
		time.Sleep(10 * time.Millisecond)
	}
	px.SetLatency(faultproxy.Downstream, 100*time.Millisecond) // beyond the 50 ms budget
	d := floodFor()
	var admitted atomic.Int64
	var slowest atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for _, h := range handlers {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Since(start) < d {
					began := time.Now()
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
					took := time.Since(began)
					for s := slowest.Load(); int64(took) > s && !slowest.CompareAndSwap(s, int64(took)); s = slowest.Load() {
					}
					if rec.Code == http.StatusOK {
						admitted.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	// Each instance's share: 50 a minute, its burst 50, refilled over the
	// flood; both instances together at most the limit's allowance.
	allowance := limit.Capacity() + int64(math.Ceil(float64(limit.Rate)*elapsed.Seconds()/limit.Period.Seconds())) + 2
	t.Logf("slow store: %d admitted of an allowance of %d (%.2f×), slowest answer %v",
		admitted.Load(), allowance, float64(admitted.Load())/float64(allowance), time.Duration(slowest.Load()))
	if admitted.Load() > allowance {
		t.Errorf("admitted %d, want at most %d", admitted.Load(), allowance)
	}
	if s := time.Duration(slowest.Load()); s > decide.DefaultBudget+500*time.Millisecond {
		t.Errorf("an answer took %v, beyond the budget and slack", s)
	}

	px.SetLatency(faultproxy.Downstream, 0)
	healed := time.Now()
	for {
		rec := httptest.NewRecorder()
		handlers[0].ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Header().Get("RateLimit") != "" { // decided by Redis: on_fail decisions send no fields
			t.Logf("decided by Redis again %v after it was fast again", time.Since(healed).Round(time.Millisecond))
			break
		}
		if time.Since(healed) > time.Second+500*time.Millisecond {
			t.Fatalf("still not decided by Redis %v after it was fast again", time.Since(healed))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// What a failing store lets through, per on_fail policy: Redis slower
// than the budget, Redis down, and the process starved of CPU (six busy
// loops beside it), each flooded by one client over two instances whose
// stores counted each other first. It logs admitted ÷ allowance for each
// and checks the bounds: local at most twice the allowance (what Redis
// decided before the fault or within the budget, plus each instance's
// share), closed nothing beyond what Redis decided. It runs with
// SLUICE_LONG=1, alone, since the busy loops slow every test beside it.
func TestFailingStoreAdmissions(t *testing.T) {
	if os.Getenv("SLUICE_LONG") == "" {
		t.Skip("floods for 18 s and starves the machine: runs with SLUICE_LONG=1")
	}
	limit := sluice.PerMinute(100)
	d := 2 * time.Second
	for _, fault := range []string{"slow", "down", "starved"} {
		for _, policy := range []rules.OnFail{rules.FailLocal, rules.FailOpen, rules.FailClosed} {
			t.Run(fault+"/"+policy.String(), func(t *testing.T) {
				srv := redistest.Start(t)
				px := faultproxy.Start(t, srv.Addr)
				rule := perIP(limit)
				rule.OnFail = policy
				set := rules.MustNew(rule)
				var urls []string
				var stores []*redisstore.Store
				for range 2 {
					s := redisStoreOn(t, singleClient(t, px.Addr), redisstore.Config{PresenceInterval: 100 * time.Millisecond})
					stores = append(stores, s)
					urls = append(urls, serve(t, middleware.Limit(s, set, decide.WithLogger(quietLogger())), &okHandler{}).URL)
				}
				for deadline := time.Now().Add(5 * time.Second); stores[0].Instances() != 2 || stores[1].Instances() != 2; time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("the stores do not count each other")
					}
				}
				switch fault {
				case "slow":
					px.SetLatency(faultproxy.Downstream, 100*time.Millisecond)
				case "down":
					px.Stop()
				case "starved":
					for range 6 {
						hog := exec.Command("sh", "-c", "while :; do :; done")
						if err := hog.Start(); err != nil {
							t.Fatal(err)
						}
						t.Cleanup(func() { _ = hog.Process.Kill(); _ = hog.Wait() })
					}
				}
				start := time.Now()
				f := &flooded{}
				var wg sync.WaitGroup
				for _, u := range urls {
					wg.Add(1)
					go func() { defer wg.Done(); floodInto(f, u, 4, d) }()
				}
				wg.Wait()
				elapsed := time.Since(start)
				allowance := limit.Capacity() + int64(math.Ceil(float64(limit.Rate)*elapsed.Seconds()/limit.Period.Seconds()))
				admitted := f.admitted.Load()
				t.Logf("%s, on_fail %s: %d offered, %d admitted of an allowance of %d: %.2f×",
					fault, policy, f.offered.Load(), admitted, allowance, float64(admitted)/float64(allowance))
				switch policy {
				case rules.FailLocal:
					if admitted > 2*allowance {
						t.Errorf("admitted %d, want at most twice the allowance %d", admitted, allowance)
					}
				case rules.FailClosed:
					if admitted > allowance {
						t.Errorf("admitted %d, want at most the allowance %d", admitted, allowance)
					}
				}
			})
		}
	}
}

// floodInto sends requests to url from conc goroutines for d, counting
// into f what was offered and admitted (any status but 200 is a refusal).
func floodInto(f *flooded, url string, conc int, d time.Duration) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc}}
	defer client.CloseIdleConnections()
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				resp, err := client.Get(url)
				if err != nil {
					f.fail("%v", err)
					return
				}
				resp.Body.Close()
				f.offered.Add(1)
				if resp.StatusCode == http.StatusOK {
					f.admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
}

// A request refused from the store's memory reaches the observer as a
// denial of its remembered rule, marked Remembered; the request's other
// rules, which nothing decided, are not reported; no store call is.
func TestRememberedRefusalObserved(t *testing.T) {
	srv := redistest.Start(t)
	set := rules.MustNew(perIP(sluice.PerHour(1)), rules.Rule{Name: "global", Key: keyfunc.Global(), Limit: sluice.PerHour(1000)})
	seen := &outcomes{}
	rec := newRecorder()
	h := middleware.Limit(redisStoreOn(t, singleClient(t, srv.Addr), redisstore.Config{}), set,
		decide.WithBudget(time.Second), decide.WithObserver(sluice.Observers(rec, seen)), decide.WithLogger(quietLogger()))(&okHandler{})
	for i, want := range []int{200, 429, 429, 429} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if w.Code != want {
			t.Fatalf("request %d: %d, want %d", i, w.Code, want)
		}
		if want == 429 && (w.Header().Get("Retry-After") != "3600" || !strings.Contains(w.Header().Get("RateLimit"), `"per-ip";r=0`)) {
			t.Fatalf("request %d: Retry-After %q, RateLimit %q", i, w.Header().Get("Retry-After"), w.Header().Get("RateLimit"))
		}
	}
	var remembered, global int
	for _, d := range rec.drain() {
		switch {
		case d.Rule == "per-ip" && d.Outcome == sluice.OutcomeDenied && d.Result.Remembered:
			remembered++
		case d.Rule == "global":
			global++
		}
	}
	if remembered != 2 || global != 2 {
		t.Fatalf("%d remembered denials, %d global decisions: want 2 and 2 (the first request and the first refusal)", remembered, global)
	}
	if n := seen.calls.Load(); n != 2 {
		t.Fatalf("%d store calls observed, want 2", n)
	}
}
