package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules/admin"
	"github.com/sluicehq/sluice/rules/rulefile"
	"github.com/sluicehq/sluice/store/redisstore"
)

// penaltyRules: 5 a minute per client; a client refused once is blocked
// for an hour.
const penaltyRules = `
rules:
  - name: abusive-clients
    key: header:X-Client
    limit: {rate: 5, per: 1m}
    penalty: {block: 1h}
`

// Real HTTP over the middleware on Redis, a single node and a 3-master
// cluster, with three instances (three stores, each with its own
// connections and memory of refusals): the refusal that starts a block on
// one instance is followed by refusals on every instance, Retry-After the
// time left in the hour; other clients pass; an operator's reset through
// one instance lifts the block there at once and on the others within
// the memory of refusals' bound (1 s).
func TestPenaltyOnRedis(t *testing.T) {
	set, err := rulefile.Parse("penalty.yaml", []byte(penaltyRules), rulefile.LoadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, topo := range []struct {
		name  string
		store func(t *testing.T) func() *redisstore.Store
	}{
		{"single node", func(t *testing.T) func() *redisstore.Store {
			srv := redistest.Start(t)
			return func() *redisstore.Store { return redisStoreOn(t, singleClient(t, srv.Addr), redisstore.Config{}) }
		}},
		{"cluster", func(t *testing.T) func() *redisstore.Store {
			c := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
			return func() *redisstore.Store { return redisStoreOn(t, clusterClient(t, c.Addrs()), redisstore.Config{}) }
		}},
	} {
		t.Run(topo.name, func(t *testing.T) {
			newStore := topo.store(t)
			var instances []*httptest.Server
			var stores []*redisstore.Store
			for range 3 {
				st := newStore()
				stores = append(stores, st)
				instances = append(instances, serve(t, middleware.Limit(st, set, decide.WithBudget(5*time.Second)), &okHandler{}))
			}
			ops := httptest.NewServer(admin.MustNew(stores[0], set))
			t.Cleanup(ops.Close)
			client := "mallory-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			status := func(i int, who string) (int, string) {
				t.Helper()
				resp := get(t, instances[i].Client(), instances[i].URL, "X-Client", who)
				return resp.StatusCode, resp.Header.Get("Retry-After")
			}
			for i := range 5 {
				if code, _ := status(0, client); code != http.StatusOK {
					t.Fatalf("request %d of 5 a minute: %d", i+1, code)
				}
			}
			started := time.Now()
			if code, ra := status(0, client); code != http.StatusTooManyRequests || ra != "3600" {
				t.Fatalf("the refusal that starts the block: %d, Retry-After %q, want 429 with 3600", code, ra)
			}
			for i := range instances {
				for range 2 { // the second from the instance's memory, if it remembers
					code, ra := status(i, client)
					left, err := strconv.Atoi(ra)
					// Rounded up: at most the hour, and at least what is left of it since the block started.
					if code != http.StatusTooManyRequests || err != nil || left > 3600 || left < 3600-int(time.Since(started)/time.Second)-1 {
						t.Fatalf("instance %d during the block: %d, Retry-After %q, want 429 with the time left in the hour", i, code, ra)
					}
				}
				if code, _ := status(i, "alice-"+strconv.Itoa(i)+client); code != http.StatusOK {
					t.Fatalf("instance %d: another client: %d, want 200", i, code)
				}
			}
			resp, err := ops.Client().Post(ops.URL+"/reset", "application/json", strings.NewReader(`{"rule": "abusive-clients", "identity": "`+client+`"}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("reset: %d", resp.StatusCode)
			}
			reset := time.Now()
			if code, _ := status(0, client); code != http.StatusOK {
				t.Fatalf("the instance that reset, right after the reset: %d, want 200", code)
			}
			for i := 1; i < len(instances); i++ {
				for {
					code, _ := status(i, client)
					if code == http.StatusOK {
						break
					}
					// Each instance passes one request after the reset (3 of
					// the 5 a minute). The memory's bound, 1 s, with slack for a busy machine:
					// a ceiling against a block that is never lifted.
					if time.Since(reset) > 5*time.Second {
						t.Fatalf("instance %d still refuses %v after the reset: %d", i, time.Since(reset), code)
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
}
