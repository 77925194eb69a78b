package metrics_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// The collector is the in-process store's Events: its evictions counter
// follows the store's own count.
var _ memstore.Events = (*metrics.Collector)(nil)

func TestMemstoreEvictions(t *testing.T) {
	c, reg := newCollector(t, metrics.Config{})
	want(t, series(t, reg), map[string]float64{"sluice_memstore_evictions_total{}": 0})
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	s := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1, MaxBuckets: 16, Events: c})
	defer s.Close(context.Background())
	out := make([]sluice.Result, 1)
	for i := range 200 {
		h := []sluice.Hit{{Key: "k" + strconv.Itoa(i), Limit: sluice.PerHour(10), Cost: 1}}
		if err := s.Take(context.Background(), h, out); err != nil {
			t.Fatal(err)
		}
	}
	if s.Evicted() < 200-16 {
		t.Fatalf("the store evicted %d buckets, want at least %d", s.Evicted(), 200-16)
	}
	want(t, series(t, reg), map[string]float64{"sluice_memstore_evictions_total{}": float64(s.Evicted())})
	c.BucketsEvicted(0)
	want(t, series(t, reg), map[string]float64{"sluice_memstore_evictions_total{}": float64(s.Evicted())})
}
