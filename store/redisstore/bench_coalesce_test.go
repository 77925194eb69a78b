package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// BenchmarkCoalescingDefault compares the default store (coalescing on)
// with coalescing off, on one redis-server on loopback, closed loop with 1,
// 4 and 64 callers on 10k keys. Each iteration is one round: every
// variant and concurrency runs a slice in turn, interleaved, so that the
// machine's drift falls on all alike; "off again" is a second store with
// coalescing off, an A/A control whose ratio to "off" is the run's noise.
// It reports, over all rounds: p50 latency at 1 caller and throughput at 4
// and 64, each as a ratio of the default (and of the control) to off.
// Run it with -benchtime=Nx for N rounds.
func BenchmarkCoalescingDefault(b *testing.B) {
	srv := redistest.Start(b)
	variants := []struct {
		name string
		cfg  redisstore.Config
	}{{"off", redisstore.Config{Coalesce: -1}}, {"default", redisstore.Config{}}, {"off again", redisstore.Config{Coalesce: -1}}}
	stores := make([]*redisstore.Store, len(variants))
	for i, v := range variants {
		stores[i] = newStoreWith(b, newClient(b, srv.Addr), nil, v.cfg)
	}
	conc := []int{1, 4, 64}
	const slice = 300 * time.Millisecond
	type acc struct {
		calls int
		took  time.Duration
		lat   []time.Duration
	}
	res := make([][]acc, len(conc)) // [concurrency][variant]
	for i := range res {
		res[i] = make([]acc, len(variants))
	}
	keys := benchKeys(10_000)
	for range 2 { // warm every store: ready connections, script loaded
		for _, s := range stores {
			measure(b, s, 8, 50*time.Millisecond, keys)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for ci, c := range conc {
			for vi, s := range stores {
				calls, took, lat := measure(b, s, c, slice, keys)
				a := &res[ci][vi]
				a.calls += calls
				a.took += took
				a.lat = append(a.lat, lat...)
			}
		}
	}
	b.StopTimer()
	for ci, c := range conc {
		for vi, v := range variants {
			a := &res[ci][vi]
			slices.Sort(a.lat)
			b.Logf("c=%-2d %-9s %8.0f calls/s  p50 %v", c, v.name, float64(a.calls)/a.took.Seconds(), a.lat[len(a.lat)/2])
		}
	}
	p50 := func(ci, vi int) float64 { a := res[ci][vi]; return float64(a.lat[len(a.lat)/2]) }
	thr := func(ci, vi int) float64 { a := res[ci][vi]; return float64(a.calls) / a.took.Seconds() }
	b.ReportMetric(p50(0, 1)/p50(0, 0), "c1-p50-default/off")
	b.ReportMetric(p50(0, 2)/p50(0, 0), "c1-p50-AA")
	b.ReportMetric(thr(1, 1)/thr(1, 0), "c4-thr-default/off")
	b.ReportMetric(thr(1, 2)/thr(1, 0), "c4-thr-AA")
	b.ReportMetric(thr(2, 1)/thr(2, 0), "c64-thr-default/off")
	b.ReportMetric(thr(2, 2)/thr(2, 0), "c64-thr-AA")
}

// measure runs c callers against s for d, back to back, and returns the
// calls made, the time taken and each call's latency.
func measure(b *testing.B, s *redisstore.Store, c int, d time.Duration, keys []string) (int, time.Duration, []time.Duration) {
	var wg sync.WaitGroup
	lats := make([][]time.Duration, c)
	start := time.Now()
	end := start.Add(d)
	for g := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hits := []sluice.Hit{{Limit: benchLimit, Cost: 1}}
			out := make([]sluice.Result, 1)
			for i := g * 7919; ; i++ {
				t0 := time.Now()
				if !t0.Before(end) {
					return
				}
				hits[0].Key = keys[i%len(keys)]
				if err := s.Take(context.Background(), hits, out); err != nil {
					panic(fmt.Sprint("take: ", err))
				}
				lats[g] = append(lats[g], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	return len(all), took, all
}

// BenchmarkCoalescedBatches shows how the default store's script calls
// are shared as concurrency rises: closed loop on one redis-server, 1, 4,
// 16 and 64 callers, over 10k keys and on one hot key, a slice of each per
// iteration. It logs the histogram of requests per script call and
// reports the mean per concurrency. Run it with -benchtime=Nx for N
// rounds:
//
//	REQUIRE_REDIS=1 go test -run '^$' -bench CoalescedBatches -benchtime 3x ./store/redisstore/
func BenchmarkCoalescedBatches(b *testing.B) {
	srv := redistest.Start(b)
	s := newStoreWith(b, newClient(b, srv.Addr), nil, redisstore.Config{})
	var mu sync.Mutex
	var sizes map[int]int // requests per call: calls
	redisstore.SetBatchCounter(s, func(n int) {
		mu.Lock()
		sizes[n]++
		mu.Unlock()
	})
	conc := []int{1, 4, 16, 64}
	shapes := []struct {
		name string
		keys []string
	}{{"10k keys", benchKeys(10_000)}, {"hot key", benchKeys(1)}}
	hist := make([][]map[int]int, len(shapes)) // [shape][concurrency]
	for i := range hist {
		hist[i] = make([]map[int]int, len(conc))
		for j := range hist[i] {
			hist[i][j] = map[int]int{}
		}
	}
	sizes = map[int]int{}
	measure(b, s, 8, 100*time.Millisecond, benchKeys(10_000)) // ready connections, script loaded
	b.ReportAllocs()
	for b.Loop() {
		for si, sh := range shapes {
			for ci, c := range conc {
				mu.Lock()
				sizes = hist[si][ci]
				mu.Unlock()
				measure(b, s, c, 300*time.Millisecond, sh.keys)
			}
		}
	}
	b.StopTimer()
	for si, sh := range shapes {
		for ci, c := range conc {
			h := hist[si][ci]
			var ns []int
			calls, reqs := 0, 0
			for n, k := range h {
				ns = append(ns, n)
				calls += k
				reqs += n * k
			}
			slices.Sort(ns)
			var parts []string
			for _, n := range ns {
				parts = append(parts, fmt.Sprintf("%d:%.1f%%", n, 100*float64(h[n])/float64(calls)))
			}
			b.Logf("%-8s c=%-2d %7d calls, %.2f requests per call; requests per call: share of calls %s",
				sh.name, c, calls, float64(reqs)/float64(calls), strings.Join(parts, " "))
			if si == 0 {
				b.ReportMetric(float64(reqs)/float64(calls), fmt.Sprintf("req/call-c%d", c))
			}
		}
	}
}
