package redisstore_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/storetest"
)

func newFailoverClient(t testing.TB, ss *redistest.Sentinels) *redis.Client {
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:            redistest.MasterName,
		SentinelAddrs:         ss.Addrs(),
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
		DialerRetries:         1,
		DialTimeout:           time.Second,
		ReadTimeout:           time.Second,
		WriteTimeout:          time.Second,
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestConformanceSentinel runs the conformance suite on a Sentinel-managed
// primary, through redis.NewFailoverClient.
func TestConformanceSentinel(t *testing.T) {
	t.Parallel()
	ss := redistest.StartSentinel(t)
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		clock := storetest.NewClock(time.Now())
		return storetest.Harness{
			Store:   newStore(t, newFailoverClient(t, ss), clock),
			SetTime: clock.Set,
			Atomic:  true,
			Clients: func(t *testing.T, n int) []sluice.Store {
				stores := make([]sluice.Store, n)
				for i := range stores {
					stores[i] = newStore(t, newFailoverClient(t, ss), clock)
				}
				return stores
			},
		}
	})
}
