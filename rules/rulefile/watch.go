package rulefile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"github.com/sluicehq/sluice/rules"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultPollInterval is how often a [Watcher] reads its file when
// [WatchConfig.Interval] is 0.
const DefaultPollInterval = 5 * time.Second

// WatchConfig configures a [Watcher]. The zero value polls every
// [DefaultPollInterval], logs to [slog.Default] and calls no hooks.
type WatchConfig struct {
	// Interval is how often the file is read. 0 means
	// DefaultPollInterval; a negative value disables polling, for callers
	// that call [Watcher.Reload] themselves (on SIGHUP, after they write the
	// file).
	Interval time.Duration
	// Logger receives a record for every reload and every refused file.
	// nil means slog.Default().
	Logger *slog.Logger
	// OnReload, if set, is called with each new Set once it is in use.
	OnReload func(*rules.Set)
	// OnError, if set, is called with the error (a *FileError) each time
	// a changed file is refused; the last good rules stay in use. A file
	// that stays broken is reported once, not at every poll.
	//
	// Both hooks run one at a time, while the watcher holds its lock: they
	// must not call Reload.
	OnError func(error)
}

// Watcher keeps the rules of a file current: it is a [rules.Source], so
// pass it where a *rules.Set would go. Create it with
// [Watch]; stop it with [Watcher.Close]. It is safe for concurrent use.
//
// Every Interval it reads the file through its path, so it sees every way a
// file is replaced: an edit in place, an atomic rename over it, and a
// Kubernetes ConfigMap update, which swaps the directory's ..data symlink.
// Content that did not change (by SHA-256) is not parsed again. A changed
// file that parses becomes the current Set in one atomic step: each request
// is decided by the old rules or the new, never a mix. A changed file that
// does not parse, or a file that cannot be read, is logged and reported to
// OnError, and the last good rules stay.
//
// Write the file atomically (write elsewhere, then rename), as ConfigMaps
// and most deployment tools do: a poll that catches an in-place write
// half-way sees a truncated file, which is refused if it does not parse but
// applied if it does.
//
// # Changed limits and existing buckets
//
// A bucket is found by the rule's name, its key kind and the identity, and
// by the algorithm, so renaming a rule, changing what it keys on or
// changing its algorithm starts fresh, empty buckets (the old ones expire).
// Otherwise the state carries over, and the new limit applies from the next
// request:
//
//   - token_bucket: the state is one timestamp, the time at which the
//     bucket will be full again. A smaller burst applies at once: the bucket
//     never holds more than the new burst, and a bucket that is more than the
//     new burst short of full must refill to below it first. A larger burst
//     is available at once to a full bucket. A changed rate keeps the time
//     to full, so the tokens owed are re-counted at the new rate.
//   - fixed_window, sliding_window and sliding_log: the counts of the
//     current (and previous) window, or the log of admitted requests, carry
//     over and are compared with the new rate, so a lower rate can refuse
//     requests at once for the rest of the window. Their state means
//     something only for one window length, so a changed period (per)
//     starts fresh buckets, as a changed algorithm does.
type Watcher struct {
	path string
	load LoadConfig
	cfg  WatchConfig
	log  *slog.Logger
	cur  atomic.Pointer[rules.Set]

	mu       sync.Mutex // serialises reloads; guards the fields below
	lastSum  [sha256.Size]byte
	lastRead string // the read error last reported, "" after a good read

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// Watch loads the rule file at path with load and returns a Watcher that
// keeps it current. An invalid file is an error here: a service should not
// start on rules it cannot read. Unless cfg.Interval is negative, Watch
// starts one goroutine, which [Watcher.Close] stops.
func Watch(path string, load LoadConfig, cfg WatchConfig) (*Watcher, error) {
	if cfg.Interval < 0 {
		return watch(path, load, cfg, nil, nil)
	}
	interval := cfg.Interval
	if interval == 0 {
		interval = DefaultPollInterval
	}
	t := time.NewTicker(interval)
	w, err := watch(path, load, cfg, t.C, t.Stop)
	if err != nil {
		t.Stop()
	}
	return w, err
}

// watch is Watch with the ticks supplied, so tests can step them.
func watch(path string, load LoadConfig, cfg WatchConfig, tick <-chan time.Time, stopTick func()) (*Watcher, error) {
	w := &Watcher{path: path, load: load, cfg: cfg, log: cfg.Logger, stop: make(chan struct{}), done: make(chan struct{})}
	if w.log == nil {
		w.log = slog.Default()
	}
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	set, err := Parse(path, data, load)
	if err != nil {
		return nil, err
	}
	w.cur.Store(set)
	w.lastSum = sha256.Sum256(data)
	if tick == nil {
		close(w.done)
		return w, nil
	}
	go w.loop(tick, stopTick)
	return w, nil
}

func (w *Watcher) loop(tick <-chan time.Time, stopTick func()) {
	defer close(w.done)
	if stopTick != nil {
		defer stopTick()
	}
	for {
		select {
		case <-w.stop:
			return
		case <-tick:
			w.poll()
		}
	}
}

// Current returns the rules in use. Call it once per request and use that
// Set for the whole request.
func (w *Watcher) Current() *rules.Set { return w.cur.Load() }

// Reload reads and applies the file now, also when its content has not
// changed. It returns the error that keeps the last good rules, also
// logged and passed to OnError, or nil. It works after Close too.
func (w *Watcher) Reload() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	data, err := readFile(w.path)
	if err != nil {
		w.lastRead = err.Error()
		w.refuse(err)
		return err
	}
	w.lastRead = ""
	return w.apply(data)
}

// Close stops polling and waits for a poll under way to finish. Current
// keeps returning the last rules. Close always returns nil; calling it
// again does nothing.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() { close(w.stop) })
	<-w.done
	return nil
}

// poll reads the file and applies it if its content changed. A read
// error or a refused file is reported once until something changes.
func (w *Watcher) poll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	data, err := readFile(w.path)
	if err != nil {
		if msg := err.Error(); msg != w.lastRead {
			w.lastRead = msg
			w.refuse(err)
		}
		return
	}
	w.lastRead = ""
	if sha256.Sum256(data) == w.lastSum {
		return
	}
	_ = w.apply(data) // reported by apply
}

// apply parses data and makes it current, or reports why not. The content
// counts as seen either way, so a refused file is not parsed again until
// it changes. w.mu is held.
func (w *Watcher) apply(data []byte) error {
	sum := sha256.Sum256(data)
	w.lastSum = sum
	set, err := Parse(w.path, data, w.load)
	if err != nil {
		w.refuse(err)
		return err
	}
	w.cur.Store(set)
	w.log.LogAttrs(context.Background(), slog.LevelInfo, "sluice: rules reloaded",
		slog.String("file", w.path), slog.Int("rules", set.Len()),
		slog.String("sha256", hex.EncodeToString(sum[:8])))
	if w.cfg.OnReload != nil {
		w.cfg.OnReload(set)
	}
	return nil
}

// refuse logs err and reports it to OnError.
func (w *Watcher) refuse(err error) {
	w.log.LogAttrs(context.Background(), slog.LevelError, "sluice: rule file refused; keeping the last good rules",
		slog.String("file", w.path), slog.String("error", err.Error()))
	if w.cfg.OnError != nil {
		w.cfg.OnError(err)
	}
}
