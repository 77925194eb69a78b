package etcd

import (
	"context"

	"github.com/sluicehq/sluice/rules/rulefile"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// WatchLater is Watch without following the key: the test changes etcd
// before it calls Start.
func WatchLater(ctx context.Context, client *clientv3.Client, key string, load rulefile.LoadConfig, opts ...Option) (*Watcher, error) {
	return newWatcher(ctx, client, key, load, opts)
}

// Start follows the key.
func (w *Watcher) Start() { w.start() }
