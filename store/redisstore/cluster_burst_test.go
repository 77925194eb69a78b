package redisstore_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/redisstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// burstLogins is the two-rule login limiter of the chiuser quick start: 5
// attempts a minute per account (the Basic auth user) and 20 per client IP
// (here the X-Real-IP header of a trusted loopback peer, so that each
// burst has an address of its own). The two buckets of a request lie in
// two slots, on two masters at most times. Both rules fail closed: a store
// call that fails answers 503, never a local decision, so every 200 was
// admitted by Redis.
func burstLogins(t testing.TB, extra ...rules.Rule) *rules.Set {
	t.Helper()
	resolve, err := keyfunc.TrustedHeader("X-Real-IP", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	if err != nil {
		t.Fatal(err)
	}
	ip, err := keyfunc.IP(keyfunc.IPConfig{Resolver: resolve})
	if err != nil {
		t.Fatal(err)
	}
	account := keyfunc.New("account", func(r *http.Request) (string, error) {
		user, _, ok := r.BasicAuth()
		if !ok || user == "" {
			return "", keyfunc.ErrMissing
		}
		return user, nil
	})
	return rules.MustNew(append([]rules.Rule{
		{Name: "login", Key: account, Limit: sluice.PerMinute(burstLimit), OnFail: rules.FailClosed},
		{Name: "login-ip", Key: ip, Limit: sluice.PerMinute(20), OnFail: rules.FailClosed},
	}, extra...)...)
}

const (
	burstLimit    = 5  // the per-account limit: what a burst may admit
	burstRequests = 50 // concurrent logins in a burst
	burstRounds   = 30
)

// testClusterCrossSlotBurst: bursts of 50 concurrent logins of one account
// from one address, through the middleware over HTTP, on a two-rule
// limiter whose buckets lie in two slots, admit exactly what a single node
// admits, the per-account limit, in at least 29 of 30 bursts (asserted
// with SLUICE_TIMING=1; logged otherwise), and never more. Each burst has
// its own account and address (fresh buckets) and the store's clock stands
// still, so no bucket refills during the run. It prints the requests'
// latency, and the same figures with the slots decided side by side
// whatever the buckets hold (as the store did before it ordered them),
// where only "never more" is asserted. The variants take turns, burst
// after burst, after a burst each that warms their connections.
func testClusterCrossSlotBurst(t *testing.T, c *redistest.Cluster) {
	variants := []*burstVariant{
		{name: "coalesced", order: redisstore.OrderWhenScarce},
		{name: "uncoalesced", coalesce: -1, order: redisstore.OrderWhenScarce},
		{name: "coalesced, side by side", order: redisstore.OrderNever},
		{name: "uncoalesced, side by side", coalesce: -1, order: redisstore.OrderNever},
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	for i, v := range variants {
		v.setUp(t, c, run, i)
	}
	for round := range burstRounds {
		for i, v := range variants {
			v.burst(t, fmt.Sprintf("acct-%s-%d-%d", run, i, round), burstAddr(i, round), true)
		}
	}
	for _, v := range variants {
		t.Logf("%s: %d bursts of %d logins at a limit of %d: exactly %d admitted in %d; admitted per burst %v; latency p50 %v, p99 %v, max %v",
			v.name, burstRounds, burstRequests, burstLimit, burstLimit, v.exact, v.admitted, v.quantile(0.5), v.quantile(0.99), v.quantile(1))
		if f := redisstore.RefundFailures(v.s); f != 0 {
			t.Errorf("%s: %d refunds failed", v.name, f)
		}
	}
	for _, v := range variants {
		if v.order == redisstore.OrderWhenScarce && os.Getenv("SLUICE_TIMING") != "" && v.exact < burstRounds-1 {
			t.Errorf("%s: exactly %d admitted in %d of %d bursts, want at least %d", v.name, burstLimit, v.exact, burstRounds, burstRounds-1)
		}
	}
}

// burstVariant is a store configuration testClusterCrossSlotBurst runs:
// its store, the server limiting logins on it and a client, and what its
// bursts showed.
type burstVariant struct {
	name     string
	coalesce int
	order    string
	s        *redisstore.Store
	url      string
	client   *http.Client
	took     []time.Duration // every request's
	admitted []int           // by burst
	exact    int             // bursts admitting exactly the limit
}

// setUp makes v's store on c, ordering as v says, the server limiting
// logins on it, and a client, and warms their connections with a burst:
// the variant i of a run.
func (v *burstVariant) setUp(tb testing.TB, c *redistest.Cluster, run string, i int) {
	v.s = newStoreWith(tb, newClusterClient(tb, c.Addrs()), storetest.NewClock(time.Now()), redisstore.Config{Coalesce: v.coalesce})
	redisstore.SetCrossSlotOrder(v.s, v.order)
	limit := middleware.Limit(v.s, burstLogins(tb), decide.WithBudget(2*time.Second), decide.WithLogger(quiet))
	srv := httptest.NewServer(limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "welcome") })))
	tb.Cleanup(srv.Close)
	v.url = srv.URL
	v.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: burstRequests}, Timeout: 10 * time.Second}
	tb.Cleanup(v.client.CloseIdleConnections)
	v.burst(tb, fmt.Sprintf("warm-%s-%d", run, i), fmt.Sprintf("10.255.255.%d", i), false)
}

// burstAddr is the client address of variant i's burst in round.
func burstAddr(i, round int) string {
	return fmt.Sprintf("10.%d.%d.%d", i, round/256%256, round%256)
}

// quantile returns the q quantile of v's latencies (1: the slowest).
func (v *burstVariant) quantile(q float64) time.Duration {
	slices.Sort(v.took)
	return v.took[int(q*float64(len(v.took)-1))]
}

// burst sends a burst of logins of account from addr, asserts it admitted
// no more than the limit, and, if count, tallies it.
func (v *burstVariant) burst(t testing.TB, account, addr string, count bool) {
	codes, took := loginBurst(t, v.client, []string{v.url}, account, addr)
	admitted, other := 0, 0
	for _, code := range codes {
		switch code {
		case http.StatusOK:
			admitted++
		case http.StatusTooManyRequests:
		default:
			other++
		}
	}
	if admitted > burstLimit {
		t.Fatalf("%s: a burst admitted %d, above the limit %d", v.name, admitted, burstLimit)
	}
	if other > 0 {
		t.Logf("%s: %d answers neither 200 nor 429 (codes %v)", v.name, other, codes)
	}
	if !count {
		return
	}
	v.took = append(v.took, took...)
	v.admitted = append(v.admitted, admitted)
	if admitted == burstLimit && other == 0 {
		v.exact++
	}
}

// loginBurst sends burstRequests concurrent logins of account from addr,
// released together, the i-th to urls[i % len(urls)] with the header
// name-value pairs given, and returns their status codes and latencies.
func loginBurst(t testing.TB, client *http.Client, urls []string, account, addr string, header ...string) ([]int, []time.Duration) {
	codes := make([]int, burstRequests)
	took := make([]time.Duration, burstRequests)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range burstRequests {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, urls[i%len(urls)]+"/login", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(account, "secret")
		req.Header.Set("X-Real-IP", addr)
		for j := 0; j+1 < len(header); j += 2 {
			req.Header.Set(header[j], header[j+1])
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			t0 := time.Now()
			resp, err := client.Do(req)
			took[i] = time.Since(t0)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
		}()
	}
	close(start)
	wg.Wait()
	return codes, took
}

// BenchmarkClusterBurst runs testClusterCrossSlotBurst's bursts (50
// concurrent logins through the middleware over HTTP, a per-account and a
// per-IP rule at 5 and 20 a minute) on a 3-master cluster, one round of
// bursts per iteration, a burst per variant in each round: the store's
// default configuration (coalescing on) and uncoalesced, each deciding
// the slots in order when scarce (the default) and side by side ("never",
// as the store did before it ordered them); the default's A/A twin is the
// control for noise. Per variant it reports the requests' median and 99th
// percentile latency and the share of bursts that admitted exactly the
// limit:
//
//	REQUIRE_REDIS=1 go test -run '^$' -bench ClusterBurst -benchtime 200x ./store/redisstore/
func BenchmarkClusterBurst(b *testing.B) {
	c := redistest.StartCluster(b, redistest.ClusterOptions{Replicas: -1})
	variants := []*burstVariant{
		{name: "scarce", order: redisstore.OrderWhenScarce},
		{name: "scarce-AA", order: redisstore.OrderWhenScarce},
		{name: "never", order: redisstore.OrderNever},
		{name: "scarce-uncoalesced", coalesce: -1, order: redisstore.OrderWhenScarce},
		{name: "never-uncoalesced", coalesce: -1, order: redisstore.OrderNever},
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	for i, v := range variants {
		v.setUp(b, c, run, i)
	}
	b.ResetTimer()
	for round := range b.N {
		for i, v := range variants {
			v.burst(b, fmt.Sprintf("acct-%s-%d-%d", run, i, round), burstAddr(i, round), true)
		}
	}
	b.StopTimer()
	for _, v := range variants {
		b.ReportMetric(float64(v.quantile(0.5).Microseconds()), v.name+"-p50-µs")
		b.ReportMetric(float64(v.quantile(0.99).Microseconds()), v.name+"-p99-µs")
		b.ReportMetric(100*float64(v.exact)/float64(b.N), v.name+"-exact-%")
	}
}
