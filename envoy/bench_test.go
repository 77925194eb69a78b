package envoy_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/envoy"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
)

// latencies collects the time of each operation from parallel goroutines.
type latencies struct {
	mu  sync.Mutex
	all []time.Duration
}

func (l *latencies) add(d []time.Duration) {
	l.mu.Lock()
	l.all = append(l.all, d...)
	l.mu.Unlock()
}

// report adds decisions/s and the p50 and p99 latencies to b's results.
func (l *latencies) report(b *testing.B) {
	if len(l.all) == 0 {
		return
	}
	slices.Sort(l.all)
	q := func(p float64) float64 {
		return float64(l.all[min(int(p*float64(len(l.all))), len(l.all)-1)].Microseconds())
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

// BenchmarkAgainstRedis measures, in one run against one redis-server on
// loopback, the rate limit service answering Envoy's generated client over
// gRPC ("service-grpc"), the same service called in process, without gRPC
// ("service-call"), and the HTTP middleware deciding the same rule for an
// HTTP request ("middleware"): one per-address token bucket over 1,024
// addresses, every request admitted, headers built. Each reports
// decisions/s (all goroutines together), the p50 and p99 of one decision,
// and allocations per decision, with 8 requests in flight per CPU.
func BenchmarkAgainstRedis(b *testing.B) {
	store := redisStore(b)
	const addrs = 1024
	mapping := mustMapping(b, `
domain: bench
descriptors:
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 1000000, name: per-ip}
`)
	svc, err := envoy.New(store, mapping)
	if err != nil {
		b.Fatal(err)
	}
	reqs := make([]*rlsv3.RateLimitRequest, addrs)
	for i := range reqs {
		reqs[i] = &rlsv3.RateLimitRequest{Domain: "bench", Descriptors: []*ratelimitv3.RateLimitDescriptor{
			{Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "10.1." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256)}}},
		}}
	}
	parallel := func(b *testing.B, op func(i int) bool) {
		var lat latencies
		b.ReportAllocs()
		b.SetParallelism(8) // 8 goroutines per CPU: concurrent requests, as Envoy sends them
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			mine := make([]time.Duration, 0, 4096)
			i := 0
			for pb.Next() {
				start := time.Now()
				if !op(i) {
					b.Error("a request was not admitted")
					return
				}
				mine = append(mine, time.Since(start))
				i++
			}
			lat.add(mine)
		})
		b.StopTimer()
		lat.report(b)
	}

	b.Run("service-grpc", func(b *testing.B) {
		c := serve(b, svc)
		ctx := context.Background()
		parallel(b, func(i int) bool {
			resp, err := c.ShouldRateLimit(ctx, reqs[i%addrs])
			return err == nil && resp.OverallCode == rlsv3.RateLimitResponse_OK
		})
	})
	b.Run("service-call", func(b *testing.B) {
		ctx := context.Background()
		parallel(b, func(i int) bool {
			resp, err := svc.ShouldRateLimit(ctx, reqs[i%addrs])
			return err == nil && resp.OverallCode == rlsv3.RateLimitResponse_OK
		})
	})
	b.Run("middleware", func(b *testing.B) {
		ip, err := keyfunc.IP(keyfunc.IPConfig{})
		if err != nil {
			b.Fatal(err)
		}
		set := rules.MustNew(rules.Rule{Name: "per-ip", Key: ip, Limit: sluice.PerSecond(1_000_000)})
		lim, err := middleware.New(store, set)
		if err != nil {
			b.Fatal(err)
		}
		h := lim.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		hreqs := make([]*http.Request, addrs)
		for i := range hreqs {
			hreqs[i] = httptest.NewRequest(http.MethodGet, "/", nil)
			hreqs[i].RemoteAddr = "10.2." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256) + ":1234"
		}
		parallel(b, func(i int) bool {
			w := &headerSink{h: http.Header{}}
			h.ServeHTTP(w, hreqs[i%addrs])
			return w.code == 0 || w.code == http.StatusOK
		})
	})
}

// headerSink is a ResponseWriter that keeps its headers and status only.
type headerSink struct {
	h    http.Header
	code int
}

func (w *headerSink) Header() http.Header         { return w.h }
func (w *headerSink) Write(p []byte) (int, error) { return len(p), nil }
func (w *headerSink) WriteHeader(code int)        { w.code = code }
