package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// BenchmarkClusterCrossSlotOrder measures the latency of a request of the
// two login rules of the chiuser quick start (5 a minute per account, 20
// per client IP), whose buckets lie in two slots, on a 3-master cluster,
// with the store's default configuration (coalescing on) but no memory of
// refusals (so that every request reaches Redis), from 1 and from 16
// goroutines, for each order of the slots:
//
//   - never: side by side always, as the store decided them before it
//     ordered them;
//   - when scarce: the default, in order while a bucket could run out; its
//     A/A twin is the control for noise;
//   - always: in order whenever both slots can refuse.
//
// Two shapes: "under the limit", every request on an account and an
// address of its own, so no bucket is ever near empty; and "refused by the
// account", every request on one account whose bucket is empty, from an
// address of its own. Each runs on loopback and with an emulated network
// round trip (see dialDelayed), in rounds (see benchRounds). It reports
// the median and 99th percentile request (p50-µs, p99-µs):
//
//	REQUIRE_REDIS=1 go test -run '^$' -bench 'ClusterCrossSlotOrder' -benchtime 2000x ./store/redisstore/
func BenchmarkClusterCrossSlotOrder(b *testing.B) {
	c := redistest.StartCluster(b, redistest.ClusterOptions{Replicas: -1})
	type variant struct {
		name  string
		order string
		s     *redisstore.Store
	}
	type network struct {
		name     string
		variants []*variant
	}
	var nets []network
	for _, rtt := range []time.Duration{0, 250 * time.Microsecond} {
		n := network{name: "loopback"}
		if rtt > 0 {
			n.name = "rtt=" + rtt.String()
		}
		for _, v := range []variant{
			{name: "never", order: redisstore.OrderNever},
			{name: "when scarce", order: redisstore.OrderWhenScarce},
			{name: "when scarce (A/A)", order: redisstore.OrderWhenScarce},
			{name: "always", order: redisstore.OrderAlways},
		} {
			opt := clusterOptions(c.Addrs())
			if rtt > 0 {
				opt.Dialer = dialDelayed(rtt)
			}
			client := redis.NewClusterClient(opt)
			b.Cleanup(func() { client.Close() })
			v.s = newStoreWith(b, client, nil, redisstore.Config{RememberRefusals: -1})
			redisstore.SetCrossSlotOrder(v.s, v.order)
			n.variants = append(n.variants, &v)
		}
		nets = append(nets, n)
	}
	account := sluice.Hit{Limit: sluice.PerMinute(5), Cost: 1}
	ip := sluice.Hit{Limit: sluice.PerMinute(20), Cost: 1}
	shapes := []struct {
		name string
		hits func(run string, i int) []sluice.Hit // the i-th request's
	}{
		{"under the limit", func(run string, i int) []sluice.Hit {
			a, p := account, ip
			a.Key, p.Key = run+"-account-"+strconv.Itoa(i), run+"-ip-"+strconv.Itoa(i)
			return []sluice.Hit{a, p}
		}},
		{"refused by the account", func(run string, i int) []sluice.Hit {
			a, p := account, ip
			a.Key, p.Key = run+"-account", run+"-ip-"+strconv.Itoa(i)
			return []sluice.Hit{a, p}
		}},
	}
	var runs atomic.Int64
	for range benchRounds() {
		for _, n := range nets {
			for _, goroutines := range []int{1, 16} {
				for _, shape := range shapes {
					for _, v := range n.variants {
						b.Run(fmt.Sprintf("%s/%d goroutines/%s/%s", n.name, goroutines, shape.name, v.name), func(b *testing.B) {
							run := "order-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatInt(runs.Add(1), 10)
							empty := account
							empty.Key = run + "-account" // the refused shape's
							spend(b, v.s, empty, 5)
							takeLatencies(b, goroutines, func(i int, out []sluice.Result) error {
								return v.s.Take(context.Background(), shape.hits(run, i), out)
							})
						})
					}
				}
			}
		}
	}
}

// takeLatencies runs b.N calls of take (the i-th call with i, and a result
// slice of the goroutine's) from goroutines goroutines, and reports the
// median and 99th percentile call.
func takeLatencies(b *testing.B, goroutines int, take func(i int, out []sluice.Result) error) {
	var next atomic.Int64
	took := make([][]time.Duration, goroutines)
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := make([]sluice.Result, 4)
			for {
				i := int(next.Add(1) - 1)
				if i >= b.N {
					return
				}
				start := time.Now()
				if err := take(i, out); err != nil {
					b.Error(err)
					return
				}
				took[w] = append(took[w], time.Since(start))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	all := slices.Concat(took...)
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
}
