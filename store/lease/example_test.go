package lease_test

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/lease"
	"github.com/sluicehq/sluice/store/memstore"
)

// Leasing a rule's buckets: the shared store (Redis in production; the
// memory store here) sees one call per lease instead of one per check.
func Example() {
	shared := memstore.New(memstore.Config{})
	defer shared.Close(context.Background())
	store, err := lease.New(shared, lease.Config{Instances: 4}) // 4 processes share the limit
	if err != nil {
		panic(err)
	}
	defer store.Close(context.Background()) // unused tokens go back

	policy := &sluice.LeasePolicy{Rule: "api", Enabled: true} // rules.Rule.Lease, or a rule file's lease: block
	hits := []sluice.Hit{{Key: "client-1", Limit: sluice.PerSecond(100), Lease: policy}}
	out := make([]sluice.Result, 1)
	admitted := 0
	for range 100 {
		if err := store.Take(context.Background(), hits, out); err != nil {
			panic(err)
		}
		if out[0].Allowed {
			admitted++
		}
	}
	fmt.Println("admitted:", admitted)
	fmt.Println("largest lease:", lease.MaxLease(sluice.PerSecond(100), sluice.TokenBucket, 4, 0.05))
	// Output:
	// admitted: 100
	// largest lease: 25
}
