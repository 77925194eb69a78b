package middleware_test

import (
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/redisstore"
)

// What a flood on one spent bucket costs Redis at a given offered rate
// (the long tier): the script calls are bounded by time, one per instance
// per min(RetryAfter, 1 s) for each check in flight there when the
// remembered refusal lapses, plus one per admitted request. So the cost
// per offered request falls as the rate offered grows. The figures it logs
// are docs/operations.md's.
func TestFloodCostByOfferedRate(t *testing.T) {
	if os.Getenv("SLUICE_LONG") == "" {
		t.Skip("floods for 10 s per case: set SLUICE_LONG=1")
	}
	limit := sluice.PerMinute(100) // RetryAfter once spent: 0.6 s
	set := rules.MustNew(perIP(limit))
	single := redistest.Start(t)
	for _, tc := range []struct {
		instances, conns int
		times            float64 // the offered rate, as a multiple of the limit's
	}{
		{1, 1, 100},
		{4, 4, 100},
		{4, 4, 1000},
	} {
		rate := tc.times * float64(limit.Rate) / limit.Period.Seconds()
		name := fmt.Sprintf("%dx%d at %.0f per s", tc.instances, tc.conns, rate)
		t.Run(name, func(t *testing.T) {
			urls := instances(t, tc.instances, set, func() sluice.Store {
				return redisStoreOn(t, singleClient(t, single.Addr), redisstore.Config{Prefix: fmt.Sprintf("rate%d:", int(rate)*10+tc.instances)})
			})
			for i := 0; ; i++ { // use the burst up: the flood meets an empty bucket
				if resp := get(t, http.DefaultClient, urls[i%len(urls)]); resp.StatusCode == http.StatusTooManyRequests {
					break
				}
			}
			before := scriptCalls(t, []string{single.Addr})
			offered, admitted, elapsed := paced(t, urls, tc.conns, rate, 10*time.Second)
			calls := scriptCalls(t, []string{single.Addr}) - before
			t.Logf("%d instances × %d connections, %.0f requests a second offered (%d in %v): %d admitted, %d script calls, %.4f per offered request",
				tc.instances, tc.conns, float64(offered)/elapsed.Seconds(), offered, elapsed.Round(time.Millisecond), admitted, calls, float64(calls)/float64(offered))
			lapse := min(limit.Period/time.Duration(limit.Rate), time.Second)
			if bound := int64(tc.instances*tc.conns)*(int64(elapsed/lapse)+1) + admitted; calls > bound {
				t.Errorf("%d script calls, want at most %d", calls, bound)
			}
		})
	}
}

// paced sends GETs to every url from conns goroutines each, together at
// rate a second on a fixed schedule, for d. It returns what was offered
// and admitted, and how long it took.
func paced(t *testing.T, urls []string, conns int, rate float64, d time.Duration) (offered, admitted int64, elapsed time.Duration) {
	var off, adm atomic.Int64
	n := len(urls) * conns
	gap := time.Duration(float64(time.Second) * float64(n) / rate) // per goroutine
	start := time.Now()
	stop := start.Add(d)
	var wg sync.WaitGroup
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			for next := start.Add(time.Duration(g) * gap / time.Duration(n)); next.Before(stop); next = next.Add(gap) {
				time.Sleep(time.Until(next))
				resp, err := client.Get(urls[g%len(urls)])
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				off.Add(1)
				if resp.StatusCode == http.StatusOK {
					adm.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return off.Load(), adm.Load(), time.Since(start)
}
