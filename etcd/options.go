package etcd

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice/rules"
)

// DefaultReadTimeout bounds each read of the key when [WithReadTimeout] is
// not given: the first one, in [Watch], and each one made to catch up after
// the watch was lost.
const DefaultReadTimeout = 5 * time.Second

// Option configures [Watch] and [Publish]. The With functions return them.
// [WithSnapshot], [WithFallback] and [WithRegisterer] configure a Watcher
// only; Publish ignores them.
type Option interface {
	apply(*config) error
}

type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

type config struct {
	name        string
	logger      *slog.Logger
	onReload    func(*rules.Set)
	onError     func(error)
	readTimeout time.Duration
	minBackoff  time.Duration
	maxBackoff  time.Duration
	snapshot    string     // WithSnapshot; "": none
	fallback    *rules.Set // WithFallback; nil: none
	registerer  prometheus.Registerer
}

func buildConfig(key string, opts []Option) (config, error) {
	c := config{name: "etcd:" + key, readTimeout: DefaultReadTimeout, minBackoff: 100 * time.Millisecond, maxBackoff: 5 * time.Second}
	for _, o := range opts {
		if o == nil {
			return c, invalidConfig("nil Option")
		}
		if err := o.apply(&c); err != nil {
			return c, err
		}
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	return c, nil
}

// WithName sets the name the document is parsed under
// ([rulefile.Parse]): it starts every error message about the document
// and selects its syntax, JSON when it ends in ".json", YAML otherwise.
// Give the same name to every instance and to [Publish], so that they
// refuse a document with the same error. Default: "etcd:" followed by the
// key.
func WithName(name string) Option {
	return optionFunc(func(c *config) error {
		if name == "" {
			return invalidConfig("WithName: empty name")
		}
		c.name = name
		return nil
	})
}

// WithLogger sets where each change applied and each document refused are
// logged. Default: [slog.Default].
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) error {
		if l == nil {
			return invalidConfig("WithLogger: nil logger")
		}
		c.logger = l
		return nil
	})
}

// OnReload calls f with each new Set once it is in use. Hooks run one at a
// time, while the watcher holds its lock: they must not call
// [Watcher.Reload].
func OnReload(f func(*rules.Set)) Option {
	return optionFunc(func(c *config) error {
		if f == nil {
			return invalidConfig("OnReload: nil func")
		}
		c.onReload = f
		return nil
	})
}

// OnError calls f with the error each time a change is refused (a
// *rulefile.FileError: a document that does not parse, the key deleted),
// while the last good rules stay in use. When [Watch] starts from the
// snapshot or the fallback rules, it calls f before it returns: with why
// etcd's document was not used (as [Watcher.Err] returns it) and, when it
// starts from the fallback rules with a snapshot configured, with why the
// snapshot was not used. Hooks run one at a time, while the watcher holds
// its lock: they must not call [Watcher.Reload].
func OnError(f func(error)) Option {
	return optionFunc(func(c *config) error {
		if f == nil {
			return invalidConfig("OnError: nil func")
		}
		c.onError = f
		return nil
	})
}

// WithReadTimeout bounds each read of the key. Default:
// [DefaultReadTimeout].
func WithReadTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d <= 0 {
			return invalidConfig("WithReadTimeout: " + d.String() + ": must be positive")
		}
		c.readTimeout = d
		return nil
	})
}

// WithSnapshot keeps a copy of the last good document in the file at
// path, so that an instance can start while etcd has no good rules. Each
// document the watcher applies from etcd (at start, and at every change
// that passes) is written there, as the document's bytes, under a
// temporary name in the same directory, synced, and renamed over path:
// a reader sees the previous document or the new one, whole. The file is
// created with mode 0600 (a rule file may hold API keys). A write that
// fails is logged and counted (sluice_etcd_snapshot_errors_total with
// op="write"), and the rules still apply; the next document applied, or
// the next [Watcher.Reload], writes again.
//
// When [Watch] finds no good document in etcd (the key missing, its
// document refused, or etcd not answering within the context and the
// read timeout), it starts from the snapshot, parsed as etcd's document
// would be (with the LoadConfig given to Watch and the syntax of
// [WithName]), and takes etcd's next good document as soon as one
// arrives. A snapshot that is missing, unreadable or itself refused is
// logged, reported to OnError and counted (op="read"), and the watcher
// starts from the fallback rules ([WithFallback]), or, without them,
// Watch fails.
//
// Give each watcher a path of its own, on a disk of the instance: two
// watchers of different keys writing one file would start each other from
// the wrong rules. The directory must exist (Watch checks it); the
// snapshot need not, before the first document is applied. Default: no
// snapshot.
func WithSnapshot(path string) Option {
	return optionFunc(func(c *config) error {
		if path == "" {
			return invalidConfig("WithSnapshot: empty path")
		}
		c.snapshot = path
		return nil
	})
}

// WithFallback gives the rules a watcher starts from when neither etcd
// nor the snapshot ([WithSnapshot]) has good rules: etcd's next good
// document replaces them as soon as it arrives. Build them in code with
// [rules.New], or parse a document the program embeds with
// rulefile.Parse. Default: none; Watch fails without good rules.
func WithFallback(set *rules.Set) Option {
	return optionFunc(func(c *config) error {
		if set == nil {
			return invalidConfig("WithFallback: nil Set")
		}
		if set.Len() == 0 {
			return invalidConfig("WithFallback: a Set without rules")
		}
		c.fallback = set
		return nil
	})
}

// WithRegisterer registers the watcher's metrics with reg (see the
// package documentation): where its rules came from,
// sluice_etcd_rules_origin{key, origin}, and the snapshot's failures,
// sluice_etcd_snapshot_errors_total{key, op}. Watchers of different keys
// may share one registry; each reports under its own key. Default: not
// registered.
func WithRegisterer(reg prometheus.Registerer) Option {
	return optionFunc(func(c *config) error {
		if reg == nil {
			return invalidConfig("WithRegisterer: nil registerer")
		}
		c.registerer = reg
		return nil
	})
}
