package middleware_test

import (
	"context"
	"github.com/sluicehq/sluice/decide"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/redisstore"
)

// BenchmarkRefusedRequest measures what a refused request costs the
// server: one client over its limit, through the middleware (the 429, its
// headers and problem body) on memstore and on the Redis store, whose
// memory of refusals answers it in process. Each round serves a block of
// requests on each in turn, "memstore again" an A/A control; it reports
// the medians over the rounds of ns per request and of the ratios taken
// within each round. Run it short:
//
//	REQUIRE_REDIS=1 go test -run '^$' -bench RefusedRequest -benchtime 20x ./middleware/
func BenchmarkRefusedRequest(b *testing.B) {
	srv := redistest.Start(b)
	set := rules.MustNew(rules.Rule{Name: "per-key", Key: keyfunc.Header("X-API-Key"), Limit: sluice.PerHour(1)})
	mem := func() sluice.Store {
		s := memstore.New(memstore.Config{})
		b.Cleanup(func() { s.Close(context.Background()) })
		return s
	}
	red, err := redisstore.New(singleClientB(b, srv.Addr), redisstore.Config{Logger: quietLogger(), PresenceInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { red.Close(context.Background()) })
	variants := []struct {
		name string
		h    http.Handler
	}{
		{"memstore", middleware.Limit(mem(), set, decide.WithLogger(quietLogger()))(&okHandler{})},
		{"redis", middleware.Limit(red, set, decide.WithLogger(quietLogger()))(&okHandler{})},
		{"memstore again", middleware.Limit(mem(), set, decide.WithLogger(quietLogger()))(&okHandler{})},
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("X-API-Key", "flooder")
	w := &headerSink{h: http.Header{}}
	for _, v := range variants { // spend the bucket
		v.h.ServeHTTP(w, req)
	}
	const block = 2000
	var rounds [][]float64
	round := func() {
		r := make([]float64, len(variants))
		for i, v := range variants {
			start := time.Now()
			for range block {
				clear(w.h)
				v.h.ServeHTTP(w, req)
			}
			r[i] = float64(time.Since(start).Nanoseconds()) / block
			if w.h.Get("Retry-After") == "" {
				b.Fatalf("%s: the request was not refused", v.name)
			}
		}
		rounds = append(rounds, r)
	}
	round()
	rounds = nil
	b.ReportAllocs()
	for b.Loop() {
		round()
	}
	b.ReportMetric(medianOf(rounds, func(r []float64) float64 { return r[0] }), "ns/refusal:memstore")
	b.ReportMetric(medianOf(rounds, func(r []float64) float64 { return r[1] }), "ns/refusal:redis")
	b.ReportMetric(medianOf(rounds, func(r []float64) float64 { return r[1] / r[0] }), "ratio:redis/memstore")
	b.ReportMetric(medianOf(rounds, func(r []float64) float64 { return r[2] / r[0] }), "A/A:memstore_again/memstore")
}

func singleClientB(b *testing.B, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true, Protocol: 2})
	b.Cleanup(func() { c.Close() })
	return c
}

// medianOf returns the median of f over rounds.
func medianOf(rounds [][]float64, f func([]float64) float64) float64 {
	vs := make([]float64, len(rounds))
	for i, r := range rounds {
		vs[i] = f(r)
	}
	slices.Sort(vs)
	if len(vs) == 0 {
		return 0
	}
	return vs[len(vs)/2]
}
