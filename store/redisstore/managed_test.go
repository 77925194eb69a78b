package redisstore_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/metrics"
	"github.com/sluicehq/sluice/store/redisstore"
)

// policyReading is one reading reported to sluice.EvictionPolicyEvents.
type policyReading struct {
	endpoint, policy string
	evicting         bool
}

// policyFeed is the metrics collector as a store's Events, which also
// sends each eviction-policy reading on readings (dropping those that find
// it full).
type policyFeed struct {
	*metrics.Collector
	readings chan policyReading
}

func newPolicyFeed(t testing.TB) (*policyFeed, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	c, err := metrics.New(metrics.Config{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	return &policyFeed{Collector: c, readings: make(chan policyReading, 64)}, reg
}

func (f *policyFeed) EvictionPolicyChecked(endpoint, policy string, evicting bool) {
	f.Collector.EvictionPolicyChecked(endpoint, policy, evicting)
	select {
	case f.readings <- policyReading{endpoint, policy, evicting}:
	default:
	}
}

// next returns the next reading, failing t when none comes within ceiling.
func (f *policyFeed) next(t testing.TB) policyReading {
	t.Helper()
	select {
	case r := <-f.readings:
		return r
	case <-time.After(ceiling):
		t.Fatalf("no eviction-policy reading within %v", ceiling)
		return policyReading{}
	}
}

// evictingGauge returns sluice_store_evicting for endpoint.
func evictingGauge(t testing.TB, reg prometheus.Gatherer, endpoint string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "sluice_store_evicting" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "endpoint" && l.GetValue() == endpoint {
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

// TestWithoutConfigCommand runs the store on a server whose CONFIG command
// is renamed away, as managed services do: it decides as usual, its policy
// checks report the policy as unknown (the metric -1), and it says once, at
// info level, that it cannot read the policy, however many checks run.
func TestWithoutConfigCommand(t *testing.T) {
	srv := redistest.Start(t, "--rename-command", "CONFIG", "")
	if v, err := redistest.Do(srv.Addr, "CONFIG", "GET", "maxmemory"); err != nil || !isReplyError(v) {
		t.Fatalf("CONFIG GET answered %v, %v on a server without CONFIG", v, err)
	}
	feed, reg := newPolicyFeed(t)
	var logs records
	s, err := redisstore.New(newClient(t, srv.Addr), redisstore.Config{
		Secret: []byte("test secret"), Logger: slog.New(&logs), Events: feed,
		PolicyCheckInterval: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	for range 3 { // the start-up check's reading, then two periodic ones
		if r := feed.next(t); r.endpoint != srv.Addr || r.policy != "" || r.evicting {
			t.Fatalf("reading %+v, want an unknown policy for %s", r, srv.Addr)
		}
	}
	if v, ok := evictingGauge(t, reg, srv.Addr); !ok || v != -1 {
		t.Fatalf("sluice_store_evicting{endpoint=%q} = %v (present %v), want -1", srv.Addr, v, ok)
	}
	out := make([]sluice.Result, 1)
	if err := s.Take(context.Background(), []sluice.Hit{{Key: "k", Limit: sluice.PerMinute(5), Cost: 1}}, out); err != nil || !out[0].Allowed {
		t.Fatalf("take: %+v, %v; want allowed", out[0], err)
	}
	said := logs.containing("CONFIG GET")
	if len(said) != 1 || !strings.HasPrefix(said[0], "INFO ") || !strings.Contains(said[0], "noeviction") {
		t.Fatalf("logged %q, want one info line saying the policy cannot be read", said)
	}
	if warned := logs.atLeast(slog.LevelWarn); len(warned) > 0 {
		t.Fatalf("warned: %q", warned)
	}
}

// isReplyError reports whether v, a reply of redistest.Do, is an error.
func isReplyError(v any) bool {
	_, ok := v.(redistest.ReplyError)
	return ok
}
