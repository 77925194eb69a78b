package lease_test

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/redistest/redisstoretest"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/metrics"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/lease"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/redisstore"
)

// The traffic of the collector tests: requests from one client on a rule
// of 100 an hour whose buckets are leased. The last two are refused, the
// second of them from the memory of refusals of a store behind a network.
const (
	observedRequests = 102
	observedAllowed  = 100
)

// topology is what a store of the collector tests is.
type topology int

const (
	inProcess topology = iota // memstore: the docs give the collector to the middleware too
	node                      // a Redis: its breaker is reported from New
	cluster                   // a Redis Cluster: each master's breaker from its first call
)

// openStore opens a fresh store (buckets of its own) whose configuration
// takes c where the docs say: a Redis store's Config.Events, memstore's
// Config.Events.
type openStore func(t *testing.T, c *metrics.Collector) (sluice.Store, topology)

// TestCollectorThroughLeases: a Prometheus collector attached as the
// docs say counts the same decisions, remembered refusals and store calls
// with and without a lease store in front of a single Redis, and its
// breaker from the start.
func TestCollectorThroughLeases(t *testing.T) {
	srv := redistest.Start(t)
	testCollectorThroughLeases(t, func(t *testing.T, c *metrics.Collector) (sluice.Store, topology) {
		s, _ := redisstoretest.Open(t, srv.Addr, observedRedisConfig(t, c))
		return s, node
	})
}

// TestCollectorThroughLeasesOverMemstore: the same over the in-process
// store, where the docs give the collector to the middleware too.
func TestCollectorThroughLeasesOverMemstore(t *testing.T) {
	testCollectorThroughLeases(t, func(t *testing.T, c *metrics.Collector) (sluice.Store, topology) {
		s := memstore.New(memstore.Config{Events: c, SweepInterval: -1})
		t.Cleanup(func() { s.Close(context.Background()) })
		return s, inProcess
	})
}

// testCollectorThroughLeasesOverCluster is TestCollectorThroughLeases on
// a Redis Cluster (run by TestOverCluster).
func testCollectorThroughLeasesOverCluster(t *testing.T, cl *redistest.Cluster) {
	testCollectorThroughLeases(t, func(t *testing.T, c *metrics.Collector) (sluice.Store, topology) {
		client := redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: cl.Addrs(), ContextTimeoutEnabled: true, DialerRetries: 1,
			DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		})
		t.Cleanup(func() { client.Close() })
		s, err := redisstore.New(client, observedRedisConfig(t, c))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(context.Background()) })
		return s, cluster
	})
}

// observedRedisConfig is the Redis store configuration of the collector
// tests: c as Config.Events, buckets of the test's own (its secret), and
// refusals remembered for longer than the test can stall.
func observedRedisConfig(t *testing.T, c *metrics.Collector) redisstore.Config {
	return redisstore.Config{Events: c, Logger: quiet, Secret: []byte(t.Name()), RememberRefusals: time.Minute}
}

func testCollectorThroughLeases(t *testing.T, open openStore) {
	wrap := func(t *testing.T, s sluice.Store) sluice.Store {
		ls, err := lease.New(s, lease.Config{Logger: quiet, RememberRefusals: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ls.Close(context.Background()) })
		return ls
	}
	other := sluice.ObserverFunc(func(context.Context, sluice.Decision) {})
	cases := []struct {
		name  string
		lease bool
		// middleware returns the middleware's observer option, if any,
		// beyond what the docs say.
		middleware func(c *metrics.Collector) sluice.Observer
	}{
		{"store", false, nil},
		{"lease", true, nil},
		{"store/collector-on-middleware-too", false, func(c *metrics.Collector) sluice.Observer { return c }},
		{"lease/collector-on-middleware-too", true, func(c *metrics.Collector) sluice.Observer { return c }},
		{"lease/collector-and-other-on-middleware", true, func(c *metrics.Collector) sluice.Observer { return sluice.Observers(c, other) }},
	}
	var base observed
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			c := metrics.MustNew(metrics.Config{Registerer: reg})
			store, topo := open(t, c)
			if topo == node && !hasSeries(t, reg, "sluice_breaker_state", 0) {
				t.Error("no sluice_breaker_state series at 0 (closed) before any request")
			}
			if tc.lease {
				store = wrap(t, store)
			}
			opts := []middleware.Option{decide.WithBudget(5 * time.Second)}
			switch {
			case tc.middleware != nil:
				opts = append(opts, decide.WithObserver(tc.middleware(c)))
			case topo == inProcess:
				opts = append(opts, decide.WithObserver(c))
			}
			runObserved(t, store, opts)
			got := gather(t, reg)
			if i == 0 {
				base = got
				want := map[string]float64{"allowed": observedAllowed, "denied": observedRequests - observedAllowed}
				if !maps.Equal(got.decisions, want) {
					t.Fatalf("decisions %v, want %v", got.decisions, want)
				}
				wantCalls, wantRemembered := uint64(observedRequests-1), 1.0
				if topo == inProcess { // nothing is remembered in process
					wantCalls, wantRemembered = observedRequests, 0
				}
				if got.calls != wantCalls || got.remembered != wantRemembered {
					t.Fatalf("%d store calls and %v refusals remembered, want %d and %v", got.calls, got.remembered, wantCalls, wantRemembered)
				}
				return
			}
			if !maps.Equal(got.decisions, base.decisions) || got.remembered != base.remembered {
				t.Errorf("decisions %v and %v remembered, want %v and %v as without leases", got.decisions, got.remembered, base.decisions, base.remembered)
			}
			if maxCalls := base.calls - 1; !tc.lease || topo == inProcess {
				// Over an in-process store every Take is a store call.
				if got.calls != base.calls {
					t.Errorf("%d store calls, want %d", got.calls, base.calls)
				}
			} else if got.calls == 0 || got.calls > maxCalls {
				// Served from leases in process: fewer calls, but some.
				t.Errorf("%d store calls, want from 1 to %d", got.calls, maxCalls)
			}
			if topo != inProcess && !hasSeries(t, reg, "sluice_breaker_state", 0) {
				t.Error("no sluice_breaker_state series at 0 (closed) after the requests")
			}
		})
	}
}

// runObserved sends the collector tests' requests through a middleware on
// store.
func runObserved(t *testing.T, store sluice.Store, opts []middleware.Option) {
	t.Helper()
	set := rules.MustNew(rules.Rule{Name: "leased", Key: keyfunc.ClientIP(), Limit: sluice.PerHour(100),
		Lease: sluice.LeasePolicy{Enabled: true}})
	h := middleware.Limit(store, set, opts...)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for i := range observedRequests {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = "203.0.113.7:1"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		want := http.StatusOK
		if i >= observedAllowed {
			want = http.StatusTooManyRequests
		}
		if w.Code != want {
			t.Fatalf("request %d: %d, want %d", i, w.Code, want)
		}
	}
}

// observed is what a collector counted of rule "leased".
type observed struct {
	decisions  map[string]float64 // non-zero sluice_decisions_total by outcome
	remembered float64            // sluice_refusals_remembered_total
	calls      uint64             // observations of sluice_store_call_duration_seconds
}

func gather(t *testing.T, reg prometheus.Gatherer) observed {
	t.Helper()
	o := observed{decisions: map[string]float64{}}
	for _, f := range gatherFamilies(t, reg) {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "sluice_decisions_total":
				if v := m.GetCounter().GetValue(); v != 0 && label(m, "rule") == "leased" {
					o.decisions[label(m, "outcome")] = v
				}
			case "sluice_refusals_remembered_total":
				o.remembered += m.GetCounter().GetValue()
			case "sluice_store_call_duration_seconds":
				o.calls += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return o
}

// hasSeries reports whether the gauge name has a series of value v.
func hasSeries(t *testing.T, reg prometheus.Gatherer, name string, v float64) bool {
	t.Helper()
	for _, f := range gatherFamilies(t, reg) {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetGauge().GetValue() == v {
				return true
			}
		}
	}
	return false
}

func gatherFamilies(t *testing.T, reg prometheus.Gatherer) []*dto.MetricFamily {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
