package etcd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/rulefile"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// newWatcher is Watch without starting to follow the key: it finds the
// rules to start from, in etcd, the snapshot or the fallback rules.
func newWatcher(ctx context.Context, client *clientv3.Client, key string, load rulefile.LoadConfig, opts []Option) (*Watcher, error) {
	if client == nil {
		return nil, invalidConfig("Watch: nil client")
	}
	if key == "" {
		return nil, invalidConfig("Watch: empty key")
	}
	cfg, err := buildConfig(key, opts)
	if err != nil {
		return nil, err
	}
	if cfg.snapshot != "" {
		if err := checkSnapshotPath(cfg.snapshot); err != nil {
			return nil, err
		}
	}
	if _, err := rulefile.Parse(cfg.name, nil, load); err != nil && !isFileError(err) {
		return nil, err // load is invalid: no document could parse
	}
	m, err := newMetrics(cfg.registerer, key)
	if err != nil {
		return nil, err
	}
	w := &Watcher{client: client, key: key, load: load, cfg: cfg, log: cfg.logger, m: m, done: make(chan struct{})}
	etcdErr := w.startFromEtcd(ctx)
	if etcdErr == nil {
		return w, nil
	}
	if cfg.snapshot == "" && cfg.fallback == nil {
		return nil, etcdErr
	}
	if err := w.startWithout(etcdErr); err != nil {
		return nil, err
	}
	return w, nil
}

// isFileError reports whether err is a *rulefile.FileError: a document
// refused, not the configuration it was parsed with.
func isFileError(err error) bool {
	_, ok := errors.AsType[*rulefile.FileError](err)
	return ok
}

// startFromEtcd reads the key and starts from its document, or returns
// why not (a *rulefile.FileError). A read that answers leaves the
// revisions to watch from, good document or not.
func (w *Watcher) startFromEtcd(ctx context.Context) error {
	resp, err := w.get(ctx)
	if err != nil {
		return err
	}
	w.watchRev = resp.Header.Revision
	if len(resp.Kvs) == 0 {
		return w.noRules()
	}
	kv := resp.Kvs[0]
	w.rev, w.lastSum = kv.ModRevision, sha256.Sum256(kv.Value)
	set, err := rulefile.Parse(w.cfg.name, kv.Value, w.load)
	if err != nil {
		return err
	}
	w.use(set, OriginEtcd)
	w.applied.Store(kv.ModRevision)
	w.log.LogAttrs(context.Background(), slog.LevelInfo, "sluice: rules loaded from etcd",
		slog.String("key", w.key), slog.String("origin", OriginEtcd.String()), slog.Int64("revision", kv.ModRevision),
		slog.Int("rules", set.Len()), slog.String("sha256", hex.EncodeToString(w.lastSum[:8])))
	w.saveSnapshot(kv.Value)
	return nil
}

// startWithout starts from the snapshot, else the fallback rules, since
// etcd had no good document (etcdErr), or returns why it cannot.
func (w *Watcher) startWithout(etcdErr error) error {
	w.lastErr = etcdErr
	w.lastSum = [sha256.Size]byte{} // etcd's next document applies, whatever it holds
	var snapErr error
	if path := w.cfg.snapshot; path != "" {
		snap, err := readSnapshot(path, w.cfg.name, w.load)
		if err == nil {
			w.use(snap.set, OriginSnapshot)
			w.log.LogAttrs(context.Background(), slog.LevelWarn, "sluice: no good rules in etcd; starting from the last good snapshot",
				slog.String("key", w.key), slog.String("origin", OriginSnapshot.String()), slog.String("snapshot", path),
				slog.Time("snapshot_modified", snap.modified.UTC().Truncate(time.Second)), slog.Int("rules", snap.set.Len()),
				slog.String("error", etcdErr.Error()))
			w.report(etcdErr)
			return nil
		}
		snapErr = err
		w.m.snapshotFailed(false)
		w.log.LogAttrs(context.Background(), slog.LevelError, "sluice: the last good snapshot cannot be used",
			slog.String("key", w.key), slog.String("snapshot", path), slog.String("error", err.Error()))
	}
	if w.cfg.fallback == nil {
		return &startError{etcd: etcdErr, snapshot: snapErr}
	}
	w.use(w.cfg.fallback, OriginFallback)
	attrs := []slog.Attr{slog.String("key", w.key), slog.String("origin", OriginFallback.String()),
		slog.Int("rules", w.cfg.fallback.Len()), slog.String("error", etcdErr.Error())}
	if snapErr != nil {
		attrs = append(attrs, slog.String("snapshot_error", snapErr.Error()))
	}
	w.log.LogAttrs(context.Background(), slog.LevelWarn, "sluice: no good rules in etcd or a snapshot; starting from the fallback rules", attrs...)
	w.report(etcdErr)
	if snapErr != nil {
		w.report(snapErr)
	}
	return nil
}

// use makes set, from origin, the rules in force.
func (w *Watcher) use(set *rules.Set, origin Origin) {
	w.cur.Store(set)
	w.origin.Store(uint32(origin))
	w.m.setOrigin(origin)
}

// report passes err to OnError.
func (w *Watcher) report(err error) {
	if w.cfg.onError != nil {
		w.cfg.onError(err)
	}
}

// startError is Watch's error when neither etcd nor the snapshot had good
// rules, and there are no fallback rules.
type startError struct{ etcd, snapshot error }

func (e *startError) Error() string {
	return "etcd: no good rules to start from: in etcd: " + e.etcd.Error() + "; in the snapshot: " + e.snapshot.Error()
}

func (e *startError) Unwrap() []error { return []error{e.etcd, e.snapshot} }
