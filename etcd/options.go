package etcd

import (
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/rules"
)

// DefaultReadTimeout bounds each read of the key when [WithReadTimeout] is
// not given: the first one, in [Watch], and each one made to catch up after
// the watch was lost.
const DefaultReadTimeout = 5 * time.Second

// Option configures [Watch] and [Publish]. The With functions return them.
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
// while the last good rules stay in use. Hooks run one at a time, while
// the watcher holds its lock: they must not call [Watcher.Reload].
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
