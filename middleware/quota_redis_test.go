package middleware_test

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules/rulefile"
	"github.com/sluicehq/sluice/store/redisstore"
)

// quotaRules: 3 an hour per tenant, 6 for acme, and at most 5 for a
// limit the application sets.
const quotaRules = `
rules:
  - name: per-tenant
    key: header:X-Tenant
    limit: {rate: 3, per: 1h}
    max_limit: {rate: 5, per: 1h}
    overrides:
      - identities: [acme]
        limit: {rate: 6, per: 1h}
`

// limitEvents records the request-set limits a limiter capped or ignored.
type limitEvents struct {
	mu     sync.Mutex
	events []sluice.RequestLimitEvent
}

func (*limitEvents) Observe(context.Context, sluice.Decision) {}

func (o *limitEvents) ObserveRequestLimit(_ context.Context, e sluice.RequestLimitEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, e)
}

// planLimits is the application's middleware in front of the limiter: it
// has loaded the customer and sets the limit of its plan (here from a
// header, for the test) with sluice.WithLimit.
func planLimits(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("X-Plan-Limit"); v != "" {
			n, _ := strconv.ParseInt(v, 10, 64)
			r = r.WithContext(sluice.WithLimit(r.Context(), "per-tenant", sluice.PerHour(n)))
		}
		next.ServeHTTP(w, r)
	})
}

// Real HTTP over the middleware on Redis, a single node and a 3-master
// cluster: an override admits its identity to its own limit while others
// get the rule's, and a limit the application sets above max_limit is
// capped.
func TestQuotasOnRedis(t *testing.T) {
	stores := singleAndCluster(t)
	set, err := rulefile.Parse("quota.yaml", []byte(quotaRules), rulefile.LoadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			obs := &limitEvents{}
			lim := middleware.Limit(st.store(t), set, decide.WithBudget(5*time.Second), decide.WithObserver(obs))
			h := serve(t, func(next http.Handler) http.Handler { return planLimits(lim(next)) }, &okHandler{})
			for _, tc := range []struct {
				tenant, plan string
				admitted     int
			}{
				{"initech", "", 3},     // the rule's limit
				{"acme", "", 6},        // its override
				{"umbrella", "100", 5}, // the application's 100, capped by max_limit
				{"hooli", "2", 2},      // the application's 2
			} {
				for i := range tc.admitted + 1 {
					hdr := []string{"X-Tenant", tc.tenant}
					if tc.plan != "" {
						hdr = append(hdr, "X-Plan-Limit", tc.plan)
					}
					resp := get(t, h.Client(), h.URL, hdr...)
					want := http.StatusOK
					if i == tc.admitted {
						want = http.StatusTooManyRequests
					}
					if resp.StatusCode != want {
						t.Fatalf("%s: request %d: %d, want %d", tc.tenant, i+1, resp.StatusCode, want)
					}
					if p, want := resp.Header.Get("RateLimit-Policy"), `"per-tenant";q=`+strconv.Itoa(tc.admitted)+`;w=3600`; p != want {
						t.Fatalf("%s: RateLimit-Policy %q, want %q", tc.tenant, p, want)
					}
				}
			}
			obs.mu.Lock()
			defer obs.mu.Unlock()
			if len(obs.events) != 6 { // umbrella's 6 requests
				t.Fatalf("events %+v, want umbrella's 6 capped", obs.events)
			}
			for _, e := range obs.events {
				if e.Rule != "per-tenant" || e.Action != sluice.RequestLimitCapped || e.Applied != sluice.PerHour(5) {
					t.Fatalf("event %+v", e)
				}
			}
		})
	}
}

// redisTopology makes a Redis store on a single node or a cluster.
type redisTopology struct {
	name  string
	store func(t *testing.T) *redisstore.Store
}

// singleAndCluster returns the topologies of the tests over real HTTP: a
// single node started now, and a 3-master cluster started by each store.
func singleAndCluster(t *testing.T) []redisTopology {
	single := redistest.Start(t)
	return []redisTopology{
		{"single node", func(t *testing.T) *redisstore.Store {
			return redisStoreOn(t, singleClient(t, single.Addr), redisstore.Config{})
		}},
		{"cluster", func(t *testing.T) *redisstore.Store {
			c := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
			return redisStoreOn(t, clusterClient(t, c.Addrs()), redisstore.Config{})
		}},
	}
}
