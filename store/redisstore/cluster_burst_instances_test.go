package redisstore_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
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

// testClusterCrossSlotBurstInstances: bursts of 50 concurrent logins of one
// account, half through each of two instances (two stores, each with its
// own cluster client and memory, behind servers of their own), on
// burstLogins with a third rule, 10 a minute per device (the X-Device
// header), so that a request's buckets lie in three slots: never more
// than the per-account limit. How many bursts admitted exactly the limit
// is logged (29 or 30 of 30 on a quiet machine): an instance that has not
// yet seen a bucket low decides its slots side by side, so a refund that
// has not landed can hold a token for a moment. The store's clock stands
// still, as in testClusterCrossSlotBurst, shared by both.
func testClusterCrossSlotBurstInstances(t *testing.T, c *redistest.Cluster) {
	clock := storetest.NewClock(time.Now())
	device := rules.Rule{Name: "login-device", Key: keyfunc.Header("X-Device"), Limit: sluice.PerMinute(10), OnFail: rules.FailClosed}
	urls := make([]string, 2)
	for i := range urls {
		s := newStoreWith(t, newClusterClient(t, c.Addrs()), clock, redisstore.Config{})
		limit := middleware.Limit(s, burstLogins(t, device), decide.WithBudget(2*time.Second), decide.WithLogger(quiet))
		srv := httptest.NewServer(limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "welcome") })))
		t.Cleanup(srv.Close)
		urls[i] = srv.URL
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: burstRequests}, Timeout: 10 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	loginBurst(t, client, urls, "warm-"+run, "10.254.255.1", "X-Device", "warm-"+run) // connections dialled
	exact := 0
	var admittedPerBurst []int
	for round := range burstRounds {
		codes, _ := loginBurst(t, client, urls, fmt.Sprintf("acct3-%s-%d", run, round), burstAddr(9, round), "X-Device", fmt.Sprintf("dev-%s-%d", run, round))
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
			t.Fatalf("burst %d admitted %d, above the limit %d", round, admitted, burstLimit)
		}
		if other > 0 {
			t.Logf("burst %d: %d answers neither 200 nor 429 (codes %v)", round, other, codes)
		}
		if admitted == burstLimit && other == 0 {
			exact++
		}
		admittedPerBurst = append(admittedPerBurst, admitted)
	}
	t.Logf("2 instances, 3 slots: %d bursts of %d logins at a limit of %d: exactly %d admitted in %d; admitted per burst %v",
		burstRounds, burstRequests, burstLimit, burstLimit, exact, admittedPerBurst)
}
