package etcd

import (
	"context"

	"github.com/sluicehq/sluice/rules/rulefile"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Publish checks data as every [Watcher] of key will (rulefile.Parse with
// load and the name of [WithName], default "etcd:" followed by the key)
// and, if it passes, writes it to key, returning the revision of the
// write. A document with a mistake is returned as the watchers would
// report it, a *rulefile.FileError, and not written. Only WithName and
// WithReadTimeout (which bounds the write) of opts apply.
//
// Watchers check every change themselves, so a document written some
// other way (etcdctl put) is refused there; Publish only says so before
// it is written.
func Publish(ctx context.Context, client *clientv3.Client, key string, data []byte, load rulefile.LoadConfig, opts ...Option) (int64, error) {
	if client == nil {
		return 0, invalidConfig("Publish: nil client")
	}
	if key == "" {
		return 0, invalidConfig("Publish: empty key")
	}
	cfg, err := buildConfig(key, opts)
	if err != nil {
		return 0, err
	}
	if _, err := rulefile.Parse(cfg.name, data, load); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.readTimeout)
	defer cancel()
	resp, err := client.Put(ctx, key, string(data))
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}
