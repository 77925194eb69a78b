package metrics_test

import (
	"testing"

	"github.com/sluicehq/sluice/metrics"
)

// sluice_store_evicting is 1 for a policy that can evict, 0 for one that
// cannot, and -1 for an endpoint whose policy the store could not read (it
// reports an empty policy).
func TestStoreEvictingUnknown(t *testing.T) {
	c, reg := newCollector(t, metrics.Config{})
	c.EvictionPolicyChecked("a:6379", "allkeys-lru", true)
	c.EvictionPolicyChecked("b:6379", "noeviction", false)
	c.EvictionPolicyChecked("c:6379", "", false)
	want(t, series(t, reg), map[string]float64{
		`sluice_store_evicting{endpoint="a:6379"}`: 1,
		`sluice_store_evicting{endpoint="b:6379"}`: 0,
		`sluice_store_evicting{endpoint="c:6379"}`: -1,
	})
	c.EvictionPolicyChecked("c:6379", "noeviction", false)
	want(t, series(t, reg), map[string]float64{`sluice_store_evicting{endpoint="c:6379"}`: 0})
}
