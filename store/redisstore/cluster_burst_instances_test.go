package redisstore_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
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

// burstLogins3 is burstLogins with a third rule, 10 a minute per device
// (the X-Device header), so a request's buckets lie in three slots.
func burstLogins3(t testing.TB) *rules.Set {
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
	return rules.MustNew(
		rules.Rule{Name: "login", Key: account, Limit: sluice.PerMinute(burstLimit), OnFail: rules.FailClosed},
		rules.Rule{Name: "login-ip", Key: ip, Limit: sluice.PerMinute(20), OnFail: rules.FailClosed},
		rules.Rule{Name: "login-device", Key: keyfunc.Header("X-Device"), Limit: sluice.PerMinute(10), OnFail: rules.FailClosed},
	)
}

// testClusterCrossSlotBurstInstances: bursts of 50 concurrent logins of one
// account, half through each of two instances (two stores, each with its
// own cluster client and memory, behind servers of their own), on a
// three-rule limiter whose buckets lie in three slots: never more than the
// per-account limit, and exactly the limit in at least 29 of 30 bursts
// (asserted with SLUICE_TIMING=1; logged otherwise). The store's clock
// stands still, as in testClusterCrossSlotBurst, shared by both.
func testClusterCrossSlotBurstInstances(t *testing.T, c *redistest.Cluster) {
	clock := storetest.NewClock(time.Now())
	const instances = 2
	urls := make([]string, instances)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: burstRequests}, Timeout: 10 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	for i := range urls {
		s := newStoreWith(t, newClusterClient(t, c.Addrs()), clock, redisstore.Config{})
		limit := middleware.Limit(s, burstLogins3(t), decide.WithBudget(2*time.Second), decide.WithLogger(quiet))
		srv := httptest.NewServer(limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "welcome") })))
		t.Cleanup(srv.Close)
		urls[i] = srv.URL
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	burst := func(account, addr, device string) (admitted, other int) {
		codes := make([]int, burstRequests)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range burstRequests {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, urls[i%instances]+"/login", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.SetBasicAuth(account, "secret")
			req.Header.Set("X-Real-IP", addr)
			req.Header.Set("X-Device", device)
			wg.Go(func() {
				<-start
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				codes[i] = resp.StatusCode
			})
		}
		close(start)
		wg.Wait()
		for _, code := range codes {
			switch code {
			case http.StatusOK:
				admitted++
			case http.StatusTooManyRequests:
			default:
				other++
			}
		}
		return admitted, other
	}
	burst("warm-"+run, "10.254.255.1", "warm-"+run) // connections dialled
	exact := 0
	var admittedPerBurst []int
	for round := range burstRounds {
		admitted, other := burst(fmt.Sprintf("acct3-%s-%d", run, round), burstAddr(9, round), fmt.Sprintf("dev-%s-%d", run, round))
		if admitted > burstLimit {
			t.Fatalf("burst %d admitted %d, above the limit %d", round, admitted, burstLimit)
		}
		if other > 0 {
			t.Logf("burst %d: %d answers neither 200 nor 429", round, other)
		}
		if admitted == burstLimit && other == 0 {
			exact++
		}
		admittedPerBurst = append(admittedPerBurst, admitted)
	}
	t.Logf("%d instances, 3 slots: %d bursts of %d logins at a limit of %d: exactly %d admitted in %d; admitted per burst %v",
		instances, burstRounds, burstRequests, burstLimit, burstLimit, exact, admittedPerBurst)
	if os.Getenv("SLUICE_TIMING") != "" && exact < burstRounds-1 {
		t.Errorf("exactly %d admitted in %d of %d bursts, want at least %d", burstLimit, exact, burstRounds, burstRounds-1)
	}
}
