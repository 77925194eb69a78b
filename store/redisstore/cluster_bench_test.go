package redisstore_test

import (
	"context"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// BenchmarkCluster measures one request of 4 token-bucket rules,
// sequentially, on a single node and on a 3+3 cluster: spread over the 3
// masters (one script per slot in one pipeline), co-located by one group
// (one script), and as 4 sequential one-rule calls; "single (A/A)" is a
// second, identical single-node run, the control for noise. Besides ns/op
// it reports the median call (p50-µs). Compare the rows of one run, whose
// sub-benchmarks alternate with -count:
//
//	REQUIRE_REDIS=1 go test -run '^$' -bench Cluster -benchtime 2000x -count 3 ./store/redisstore/
func BenchmarkCluster(b *testing.B) {
	srv := redistest.Start(b)
	c := redistest.StartCluster(b, redistest.ClusterOptions{Replicas: -1})
	ctx := context.Background()
	single := newStore(b, newClient(b, srv.Addr), nil)
	control := newStore(b, newClient(b, srv.Addr), nil)
	cluster := newStore(b, newClusterClient(b, c.Addrs()), nil)
	spread := spreadHits(b, cluster, c, 4)
	colocated := slices.Clone(spread)
	for i := range colocated {
		colocated[i].Group = "bench-user"
	}
	sequential := func(s *redisstore.Store, hits []sluice.Hit, out []sluice.Result) error {
		for i := range hits {
			if err := s.Take(ctx, hits[i:i+1], out[i:i+1]); err != nil {
				return err
			}
		}
		return nil
	}
	one := func(s *redisstore.Store, hits []sluice.Hit, out []sluice.Result) error { return s.Take(ctx, hits, out) }
	for _, bc := range []struct {
		name string
		s    *redisstore.Store
		hits []sluice.Hit
		take func(*redisstore.Store, []sluice.Hit, []sluice.Result) error
	}{
		{"single", single, spread, one},
		{"single (A/A)", control, spread, one},
		{"cluster, 3 nodes", cluster, spread, one},
		{"cluster, co-located", cluster, colocated, one},
		{"cluster, 4 sequential calls", cluster, spread, sequential},
	} {
		b.Run(bc.name, func(b *testing.B) {
			out := make([]sluice.Result, len(bc.hits))
			var took []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				if err := bc.take(bc.s, bc.hits, out); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
		})
	}
}

// spreadHits returns n hits whose keys lie on as many masters as the
// cluster has, with a limit they never reach.
func spreadHits(b *testing.B, s *redisstore.Store, c *redistest.Cluster, n int) []sluice.Hit {
	var hits []sluice.Hit
	used := map[string]int{}
	for i := 0; len(hits) < n; i++ {
		h := sluice.Hit{Key: "bench-rule-" + strconv.Itoa(i), Limit: benchLimit, Cost: 1}
		m := c.MasterOf(redisstore.SlotOf(redisstore.KeyOf(s, h)))
		if m == nil || used[m.Addr] > (n-1)/len(c.Nodes) {
			continue
		}
		used[m.Addr]++
		hits = append(hits, h)
	}
	return hits
}

// BenchmarkClusterThroughput measures one-rule checks from 64 goroutines on
// 10k keys, on a single node and on a 3-master cluster, coalesced and not,
// and reports checks/s and the servers' CPU per check (user + system,
// summed over the nodes, from INFO cpu). Three servers share the machine's
// cores with the client here: per-check cost is what scales.
//
//	REQUIRE_REDIS=1 go test -run '^$' -bench ClusterThroughput -benchtime 3s ./store/redisstore/
func BenchmarkClusterThroughput(b *testing.B) {
	srv := redistest.Start(b)
	c := redistest.StartCluster(b, redistest.ClusterOptions{Replicas: -1})
	ctx := context.Background()
	ks := benchKeys(10_000)
	for _, bc := range []struct {
		name     string
		cluster  bool
		coalesce int
	}{
		{"single", false, 0}, {"cluster", true, 0},
		{"single/coalesced", false, 64}, {"cluster/coalesced", true, 64},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var s *redisstore.Store
			addrs := []string{srv.Addr}
			if bc.cluster {
				s = newStoreWith(b, newClusterClient(b, c.Addrs()), nil, redisstore.Config{Coalesce: bc.coalesce})
				addrs = c.Addrs()
			} else {
				s = newStoreWith(b, newClient(b, srv.Addr), nil, redisstore.Config{Coalesce: bc.coalesce})
			}
			cpu := func() float64 {
				var sum float64
				for _, a := range addrs {
					info, err := redistest.Info(a, "cpu")
					if err != nil {
						b.Fatal(err)
					}
					for _, f := range []string{"used_cpu_user", "used_cpu_sys"} {
						v, _ := strconv.ParseFloat(info[f], 64)
						sum += v
					}
				}
				return sum
			}
			var seq atomic.Int64
			before, start := cpu(), time.Now()
			b.ReportAllocs()
			b.SetParallelism(32)
			b.RunParallel(func(pb *testing.PB) {
				hits := []sluice.Hit{{Limit: benchLimit, Cost: 1}}
				out := make([]sluice.Result, 1)
				i := int(seq.Add(7919))
				for pb.Next() {
					hits[0].Key = ks[i%len(ks)]
					i++
					if err := s.Take(ctx, hits, out); err != nil {
						b.Fatal(err)
					}
				}
			})
			elapsed := time.Since(start)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "checks/s")
			b.ReportMetric((cpu()-before)*1e6/float64(b.N), "server-cpu-µs/check")
		})
	}
}
