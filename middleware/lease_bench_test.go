//go:build unix

package middleware_test

import (
	"context"
	"github.com/sluicehq/sluice/decide"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/lease"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/redisstore"
)

// cpuTime returns the CPU time this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHandlerHotKeyLeases measures the middleware on one hot API key,
// in parallel, over memstore (twice: A and the A/A control A2), over a
// lease store on a real Redis, and over the Redis store alone. Besides
// ns/op it reports the process's CPU per request (cpu-ns/op, from
// getrusage), which is what leases save: the Redis store alone spends it
// on the client side of a round trip per request.
func BenchmarkHandlerHotKeyLeases(b *testing.B) {
	srv := redistest.Start(b)
	redisStore := func(b *testing.B) sluice.Store {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ContextTimeoutEnabled: true, DialerRetries: 1})
		b.Cleanup(func() { c.Close() })
		s, err := redisstore.New(c, redisstore.Config{Logger: quietLogger(), Coalesce: 64})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close(context.Background()) })
		return s
	}
	mem := func(b *testing.B) sluice.Store {
		s := memstore.New(memstore.Config{})
		b.Cleanup(func() { s.Close(context.Background()) })
		return s
	}
	set := rules.MustNew(rules.Rule{Name: "per-key", Key: keyfunc.Header("X-API-Key"),
		Limit: sluice.PerSecond(1_000_000).WithBurst(1 << 40), Lease: sluice.LeasePolicy{Enabled: true, MaxLease: 4096}})
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, bc := range []struct {
		name  string
		store func(b *testing.B) sluice.Store
	}{
		{"memstore/A", mem},
		{"lease/redis", func(b *testing.B) sluice.Store {
			s, err := lease.New(redisStore(b), lease.Config{MaxLease: 4096, SweepInterval: -1, Instances: 1})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close(context.Background()) })
			return s
		}},
		{"redis", redisStore},
		{"memstore/A2", mem},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := middleware.Limit(bc.store(b), set, decide.WithLogger(quietLogger()))(next)
			b.ReportAllocs()
			start := cpuTime(b)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				req := httptest.NewRequest(http.MethodGet, "/", nil)
				req.Header.Set("X-API-Key", "hot")
				w := &headerSink{h: http.Header{}}
				for pb.Next() {
					clear(w.h)
					h.ServeHTTP(w, req)
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
		})
	}
}
