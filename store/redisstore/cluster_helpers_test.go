package redisstore_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/storetest"
)

// clusterOptions are go-redis cluster options fit for a limiter on a
// cluster seeded by addrs: deadlines honoured, one dial attempt, and a slot
// map reloaded on failures by the store.
func clusterOptions(addrs []string) *redis.ClusterOptions {
	return &redis.ClusterOptions{
		Addrs:                 addrs,
		ContextTimeoutEnabled: true,
		DialerRetries:         1,
		DialTimeout:           time.Second,
		ReadTimeout:           time.Second,
		WriteTimeout:          time.Second,
	}
}

func newClusterClient(t testing.TB, addrs []string) *redis.ClusterClient {
	c := redis.NewClusterClient(clusterOptions(addrs))
	t.Cleanup(func() { c.Close() })
	return c
}

// clusterHarnesses returns a factory of harnesses on the cluster c; each
// harness has its own store (and client) and clock.
func clusterHarnesses(c *redistest.Cluster) storetest.Factory {
	return func(t *testing.T) storetest.Harness {
		clock := storetest.NewClock(time.Now())
		return storetest.Harness{
			Store:   newStore(t, newClusterClient(t, c.Addrs()), clock),
			SetTime: clock.Set,
			Atomic:  true,
			Clients: func(t *testing.T, n int) []sluice.Store {
				stores := make([]sluice.Store, n)
				for i := range stores {
					stores[i] = newStore(t, newClusterClient(t, c.Addrs()), clock)
				}
				return stores
			},
		}
	}
}
