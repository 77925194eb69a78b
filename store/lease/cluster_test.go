package lease_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/lease"
	"github.com/sluicehq/sluice/store/redisstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// TestOverCluster runs the lease tests that share one Redis Cluster (3
// masters with a replica each): the conformance suite, and a request
// whose rules lie in different slots, and a collector counting through
// leases.
func TestOverCluster(t *testing.T) {
	c := redistest.StartCluster(t, redistest.ClusterOptions{})
	t.Run("CrossSlotRefusal", func(t *testing.T) { testCrossSlotRefusal(t, c) })
	t.Run("CollectorThroughLeases", func(t *testing.T) { testCollectorThroughLeasesOverCluster(t, c) })
	t.Run("Conformance", func(t *testing.T) {
		storetest.Run(t, leaseHarnesses(func(t *testing.T, clock *storetest.Clock) sluice.Store {
			return clusterStore(t, c, clock)
		}))
	})
}

// clusterStore returns a Redis store on its own cluster client of c. With
// a clock, its scripts decide by that clock instead of the servers'.
func clusterStore(t testing.TB, c *redistest.Cluster, clock *storetest.Clock) *redisstore.Store {
	t.Helper()
	client := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: c.Addrs(), ContextTimeoutEnabled: true, DialerRetries: 1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
	})
	t.Cleanup(func() { client.Close() })
	cfg := redisstore.Config{Logger: quiet, Secret: []byte("test secret"), RememberRefusals: -1, PresenceInterval: -1}
	if clock != nil {
		client.AddHook(clockHook{clock})
		cfg.Clock = clock // calendar boundaries placed on the same clock
	}
	s, err := redisstore.New(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// clusterKeys returns the keys the cluster's masters hold.
func clusterKeys(t *testing.T, c *redistest.Cluster) []string {
	t.Helper()
	var keys []string
	for _, n := range c.Live() {
		if role, err := redistest.Info(n.Addr, "replication"); err != nil || role["role"] != "master" {
			continue
		}
		v, err := redistest.Do(n.Addr, "KEYS", "*")
		if err != nil {
			t.Fatal(err)
		}
		list, _ := v.([]any)
		for _, k := range list {
			keys = append(keys, k.(string))
		}
	}
	return keys
}

// takeNewKey takes h from s and returns the Redis key the take created.
func takeNewKey(t *testing.T, c *redistest.Cluster, s sluice.Store, h sluice.Hit) string {
	t.Helper()
	before := clusterKeys(t, c)
	if r := take(t, s, h)[0]; !r.Allowed {
		t.Fatalf("the first take of %s: refused", h.Key)
	}
	var added []string
	for _, k := range clusterKeys(t, c) {
		if !slices.Contains(before, k) {
			added = append(added, k)
		}
	}
	if len(added) != 1 {
		t.Fatalf("the first take of %s added the keys %q, want one", h.Key, added)
	}
	return added[0]
}

// testCrossSlotRefusal: a request of a leased rule and a rule that refuses
// it, their buckets in different slots, consumes nothing: the leased
// bucket in Redis (read back through the Redis store) and the lease's
// view of it are as before the request, whether the leased hit needs a
// refill (which Redis takes in its own slot and gives back) or is served
// from the lease.
func testCrossSlotRefusal(t *testing.T, c *redistest.Cluster) {
	clock := storetest.NewClock(time.Now().Truncate(time.Hour).Add(17 * time.Minute))
	back := clusterStore(t, c, clock)
	rec := newRecorder()
	s := newStore(t, back, lease.Config{Clock: clock, Observer: rec, Logger: quiet, SweepInterval: -1, MaxLease: 8})
	run := time.Now().UnixNano()
	leasedHit := sluice.Hit{Key: fmt.Sprint("xslot-leased-", run), Limit: sluice.PerHour(100), Lease: leased}
	leasedKey := takeNewKey(t, c, s, leasedHit) // the first take takes exactly its cost: the lease holds nothing
	var refusing sluice.Hit
	for i := 0; ; i++ {
		if i == 10 {
			t.Fatal("no key in a slot other than the leased bucket's")
		}
		refusing = sluice.Hit{Key: fmt.Sprint("xslot-refusing-", run, "-", i), Limit: sluice.PerHour(1)} // not leased
		if k := takeNewKey(t, c, s, refusing); c.Slot(k) != c.Slot(leasedKey) {                          // its only token taken
			break
		}
	}
	request := []sluice.Hit{leasedHit, refusing}
	check := func(what string, wantBacking, wantLease int64) {
		t.Helper()
		out := take(t, s, request...)
		if sluice.Admitted(request, out) || !out[0].Allowed || out[1].Allowed {
			t.Fatalf("%s: the request %+v, want the leased hit allowed and the other refused", what, out)
		}
		if out[0].Receipt != (sluice.Receipt{}) {
			t.Fatalf("%s: the leased hit of a refused request has a receipt: %+v", what, out[0].Receipt)
		}
		if got := peek(t, back, leasedHit); got != wantBacking {
			t.Fatalf("%s: the leased bucket in Redis holds %d after the refused request, want %d", what, got, wantBacking)
		}
		if got := peek(t, s, leasedHit); got != wantLease {
			t.Fatalf("%s: the lease store sees %d in the leased bucket after the refused request, want %d", what, got, wantLease)
		}
	}
	check("a refill", 99, 99)

	for range 3 { // a lease holding tokens
		take(t, s, leasedHit)
	}
	backing, viewed := peek(t, back, leasedHit), peek(t, s, leasedHit)
	if viewed != 96 || backing >= viewed {
		t.Fatalf("after 4 takes the bucket holds %d in Redis and %d with the lease, want a lease holding tokens and 96 in all", backing, viewed)
	}
	check("served from the lease", backing, viewed)
	if rec.lost != 0 {
		t.Fatalf("%d tokens lost, want 0", rec.lost)
	}
}
