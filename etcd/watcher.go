package etcd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/rulefile"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Watcher keeps the rules of one etcd key current: it is a [rules.Source],
// so pass it where a *rules.Set or a *rulefile.Watcher would go. Create it with [Watch]; stop
// it with [Watcher.Close]. It is safe for concurrent use.
//
// The key holds one rule file's document, YAML or JSON (see the rulefile
// package). The watcher follows the key with an etcd watch, not by
// polling: a change is parsed and checked in full with [rulefile.Parse],
// and a document that passes becomes the current Set in one atomic step,
// so each request is decided by the old rules or the new, never a mix. A
// document that does not parse, or the key deleted, is logged and reported
// to OnError, and the last good rules stay in use. Every instance parses
// the same document under the same name ([WithName]), so every instance
// refuses a bad document with the same error.
//
// A watcher given a snapshot file ([WithSnapshot]) keeps a copy of each
// document it applies there, so that a new instance can start while etcd
// has no good document or does not answer; given fallback rules
// ([WithFallback]), it can start without either. It then takes etcd's next
// good document as soon as one arrives. [Watcher.Origin] says where the
// rules in force came from.
//
// While etcd cannot be reached the rules in force stay, and Current keeps
// returning them; the watch resumes where it stopped when etcd answers
// again, and a change made meanwhile is applied then. When etcd has
// compacted the revisions the watch would resume from, or the watch is
// lost some other way, the watcher reads the key again and watches on from
// there.
//
// What a changed limit does to the buckets that exist is described in
// [rulefile.Watcher]'s documentation: the same applies here.
type Watcher struct {
	client *clientv3.Client
	key    string
	load   rulefile.LoadConfig
	cfg    config
	log    *slog.Logger
	m      *watchMetrics // nil without WithRegisterer
	cur    atomic.Pointer[rules.Set]
	origin atomic.Uint32 // the Origin of cur

	mu       sync.Mutex // serialises applies; guards the fields below
	lastSum  [sha256.Size]byte
	rev      int64  // the key's modification revision last seen, applied or refused
	watchRev int64  // the store revision the watch has seen up to
	lastErr  error  // why the last change was refused; nil once one applies
	unsaved  []byte // the document applied whose snapshot failed; nil once written

	applied atomic.Int64 // the modification revision of the rules in use

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// Watch reads the rules at key through client, with load as their
// rulefile.Parse configuration, and returns a Watcher that keeps them
// current. Client and key are required; the options, load and the
// snapshot's directory are checked before etcd is read.
//
// When etcd has no good document at start (the key missing, its document
// refused, or etcd not answering within ctx and the read timeout), Watch
// starts from the last good snapshot ([WithSnapshot]), else from the
// fallback rules ([WithFallback]), logs which at level WARN, and the
// watcher takes etcd's next good document as soon as one arrives:
// [Watcher.Origin] and [Watcher.Err] say where the rules in force came
// from and why not from etcd. Without either, no good document in etcd
// is an error (etcd's: a service should not start on rules it cannot
// read); with a snapshot but no fallback rules, so is a snapshot that
// cannot be used, and the error says why for both (errors.Is finds
// [ErrNoRules], rulefile.ErrInvalidFile or fs.ErrNotExist in it). Watch
// starts one goroutine, which [Watcher.Close] stops; closing the client
// stops it too.
func Watch(ctx context.Context, client *clientv3.Client, key string, load rulefile.LoadConfig, opts ...Option) (*Watcher, error) {
	w, err := newWatcher(ctx, client, key, load, opts)
	if err != nil {
		return nil, err
	}
	w.start()
	return w, nil
}

// start follows the key in a goroutine of its own.
func (w *Watcher) start() {
	w.ctx, w.cancel = context.WithCancel(w.client.Ctx())
	go w.loop()
}

// Current returns the rules in use. Call it once per request and use that
// Set for the whole request.
func (w *Watcher) Current() *rules.Set { return w.cur.Load() }

// Origin returns where the rules in use came from: etcd, or, until etcd's
// first good document arrives, the snapshot or the fallback rules Watch
// started from.
func (w *Watcher) Origin() Origin { return Origin(w.origin.Load()) }

// Revision returns the etcd modification revision of the document whose
// rules are in use: instances that return the same revision decide by the
// same rules. It is 0 while the rules come from the snapshot or the
// fallback rules.
func (w *Watcher) Revision() int64 { return w.applied.Load() }

// Err returns why the last change was refused (a *rulefile.FileError),
// while the last good rules stay in use, or nil once a change applies.
// After a start from the snapshot or the fallback rules, it returns why
// etcd's document was not used until one applies.
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}

// Reload reads the key now and applies it, also when it has not changed.
// It returns the error that keeps the last good rules, also logged and
// passed to OnError (a refused document, a deleted key, etcd not
// answering within ctx or the read timeout), or nil. It works after Close
// too.
func (w *Watcher) Reload(ctx context.Context) error {
	resp, err := w.get(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.refuse(err)
		return err
	}
	if len(resp.Kvs) == 0 {
		err := w.noRules()
		w.refuse(err)
		return err
	}
	kv := resp.Kvs[0]
	return w.apply(kv.Value, kv.ModRevision, true)
}

// Close stops following the key and waits for the goroutine to end.
// Current keeps returning the last rules. Close always returns nil;
// calling it again does nothing.
func (w *Watcher) Close() error {
	if w.cancel != nil {
		w.cancel()
		<-w.done
	}
	return nil
}

// get reads the key within ctx and the read timeout. Errors are
// *rulefile.FileErrors.
func (w *Watcher) get(ctx context.Context) (*clientv3.GetResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.readTimeout)
	defer cancel()
	resp, err := w.client.Get(ctx, w.key)
	if err != nil {
		return nil, &rulefile.FileError{File: w.cfg.name, Err: fmt.Errorf("reading the key from etcd: %w", err)}
	}
	return resp, nil
}

func (w *Watcher) noRules() error { return &rulefile.FileError{File: w.cfg.name, Err: ErrNoRules} }

// loop follows the key until Close: a watch from the revision last seen,
// and, when the watch is lost (compacted, no leader, closed) or etcd had
// not answered at start, a read of the key and a new watch, retried with
// a growing pause while etcd does not answer.
func (w *Watcher) loop() {
	defer close(w.done)
	backoff := w.cfg.minBackoff
	for {
		if w.seen() {
			w.follow()
			if !w.pause(backoff) {
				return
			}
		}
		if err := w.resync(); err != nil {
			backoff = min(2*backoff, w.cfg.maxBackoff)
			if !w.seen() && !w.pause(backoff) {
				return
			}
			continue
		}
		backoff = w.cfg.minBackoff
	}
}

// seen reports whether etcd has answered: there is a revision to watch
// from.
func (w *Watcher) seen() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.watchRev > 0
}

// pause waits for d, and reports false if the watcher is closed first.
func (w *Watcher) pause(d time.Duration) bool {
	select {
	case <-w.ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// follow watches the key from the revision after the last one seen, and
// applies its changes, until the watch ends.
func (w *Watcher) follow() {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(w.ctx))
	defer cancel()
	w.mu.Lock()
	from := w.watchRev + 1
	w.mu.Unlock()
	for resp := range w.client.Watch(ctx, w.key, clientv3.WithRev(from)) {
		if err := resp.Err(); err != nil {
			if w.ctx.Err() == nil {
				w.log.LogAttrs(context.Background(), slog.LevelWarn, "sluice: etcd watch lost; reading the rules again",
					slog.String("key", w.key), slog.String("error", err.Error()))
			}
			return
		}
		w.events(resp.Events, resp.Header.Revision)
	}
}

// events applies the last change among events, the watch's answer up to
// revision.
func (w *Watcher) events(events []*clientv3.Event, revision int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watchRev = max(w.watchRev, revision)
	if len(events) == 0 {
		return // a progress notification
	}
	ev := events[len(events)-1] // intermediate versions do not matter
	if ev.Type == mvccpb.DELETE {
		w.rev = ev.Kv.ModRevision
		w.refuse(w.noRules())
		return
	}
	_ = w.apply(ev.Kv.Value, ev.Kv.ModRevision, false) // reported by apply
}

// resync reads the key and applies it if it changed since it was last
// seen, then lets the next watch start from the read's revision.
func (w *Watcher) resync() error {
	resp, err := w.get(w.ctx)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watchRev = resp.Header.Revision
	switch {
	case len(resp.Kvs) == 0:
		if w.lastErr == nil || !errors.Is(w.lastErr, ErrNoRules) {
			w.refuse(w.noRules())
		}
	case resp.Kvs[0].ModRevision != w.rev:
		_ = w.apply(resp.Kvs[0].Value, resp.Kvs[0].ModRevision, false)
	}
	return nil
}

// apply parses data, the key's content at revision rev, and makes it
// current, or reports why not. Unless force, content equal to what is in
// use is not parsed again. A document applied is saved as the snapshot.
// w.mu is held.
func (w *Watcher) apply(data []byte, rev int64, force bool) error {
	sum := sha256.Sum256(data)
	w.rev = rev
	if !force && sum == w.lastSum && w.lastErr == nil {
		w.applied.Store(rev)
		if w.unsaved != nil {
			w.saveSnapshot(w.unsaved) // the last write failed: try again
		}
		return nil
	}
	w.lastSum = sum
	set, err := rulefile.Parse(w.cfg.name, data, w.load)
	if err != nil {
		w.refuse(err)
		return err
	}
	was := w.Origin()
	w.use(set, OriginEtcd)
	w.applied.Store(rev)
	w.lastErr = nil
	attrs := []slog.Attr{slog.String("key", w.key), slog.String("origin", OriginEtcd.String()), slog.Int64("revision", rev),
		slog.Int("rules", set.Len()), slog.String("sha256", hex.EncodeToString(sum[:8]))}
	msg := "sluice: rules reloaded"
	if was != OriginEtcd {
		msg = "sluice: rules from etcd in force, replacing the " + was.String() + " rules"
		attrs = append(attrs, slog.String("replaced", was.String()))
	}
	w.log.LogAttrs(context.Background(), slog.LevelInfo, msg, attrs...)
	w.saveSnapshot(data)
	if w.cfg.onReload != nil {
		w.cfg.onReload(set)
	}
	return nil
}

// saveSnapshot writes data, the document in use, to the snapshot, or
// logs and counts why not. w.mu is held, or the watcher is not started.
func (w *Watcher) saveSnapshot(data []byte) {
	if w.cfg.snapshot == "" {
		return
	}
	if err := writeSnapshot(w.cfg.snapshot, data); err != nil {
		w.unsaved = data
		w.m.snapshotFailed(true)
		w.log.LogAttrs(context.Background(), slog.LevelError, "sluice: the snapshot of the rules in force was not written",
			slog.String("key", w.key), slog.String("snapshot", w.cfg.snapshot), slog.String("error", err.Error()))
		return
	}
	w.unsaved = nil
}

// refuse records err, logs it and reports it to OnError. w.mu is held.
func (w *Watcher) refuse(err error) {
	w.lastErr = err
	w.log.LogAttrs(context.Background(), slog.LevelError, "sluice: rules in etcd refused; keeping the last good rules",
		slog.String("key", w.key), slog.String("origin", w.Origin().String()), slog.String("error", err.Error()))
	w.report(err)
}
