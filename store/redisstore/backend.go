package redisstore

import (
	"context"

	"github.com/sluicehq/sluice"
)

// backend is the store's topology: a single node or a Sentinel-managed
// primary (node), or a Redis Cluster (cluster). Each sends its commands
// through a sender (see send.go), which it tells where they go.
type backend interface {
	// take decides hits into out; partial lets a request whose cluster
	// slots failed only in part keep the others' decisions (see
	// Store.TakePartial).
	take(ctx context.Context, hits []sluice.Hit, out []sluice.Result, partial bool) error
	refund(ctx context.Context, refunds []sluice.Refund) error
	// refresh restarts the hold of concurrency slots (see
	// Store.RefreshSlots).
	refresh(ctx context.Context, refreshes []sluice.SlotRefresh) error
	reset(ctx context.Context, hits []sluice.Hit) error
	breakerState() sluice.BreakerState
	// policies reads the eviction policy of every server holding keys.
	policies(ctx context.Context) ([]policyReading, error)
	// name names the topology in events and logs.
	name() string
	// ready reports why the topology cannot decide now, or nil (see
	// Store.Ready).
	ready(ctx context.Context) error
	// idleConns is how many ready connections are idle, -1 when it keeps
	// none.
	idleConns() int
	// wrongClient reports, at start-up, whether the server does not fit
	// the client: a Redis Cluster node behind a client that is not a
	// cluster client.
	wrongClient(ctx context.Context) bool
	// loops are the topology's background work, run until the store
	// closes.
	loops() []func(ctx context.Context)
}
