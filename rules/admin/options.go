package admin

import (
	"fmt"
	"log/slog"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
)

// Option configures [New].
type Option interface {
	apply(*config) error
}

// optionFunc adapts a function to [Option].
type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

type config struct {
	log      *slog.Logger
	observer sluice.Observer
	ipParse  IdentityParser // WithIPv6Prefix's; nil: each ip key groups as it does itself
	secret   []byte
	parsers  map[string]IdentityParser
	srcs     []rules.Source
	clock    sluice.Clock // nil: the system clock
}

// IdentityParser turns an identity as an operator types it into the key a
// rule's key function returns for that identity, or an error saying why
// the text is not one.
type IdentityParser = keyfunc.IdentityParser

// WithLogger sets where resets are logged. Default: [slog.Default].
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) error {
		if l == nil {
			return fmt.Errorf("%w: admin: WithLogger: nil logger", sluice.ErrInvalidConfig)
		}
		c.log = l
		return nil
	})
}

// WithObserver reports each reset to o, if o implements
// [sluice.ResetObserver] (the metrics package's Collector does). Default:
// none.
func WithObserver(o sluice.Observer) Option {
	return optionFunc(func(c *config) error { c.observer = o; return nil })
}

// WithHashSecret sets the key of the hash under which resets log
// identities. Give every instance the same secret to correlate their
// logs. Default: a random key per handler.
func WithHashSecret(secret []byte) Option {
	return optionFunc(func(c *config) error {
		if len(secret) == 0 {
			return fmt.Errorf("%w: admin: WithHashSecret: empty secret", sluice.ErrInvalidConfig)
		}
		c.secret = append([]byte(nil), secret...)
		return nil
	})
}

// WithIdentity sets the parser of the identities of every rule whose key
// is of kind, replacing the key's own (see [keyfunc.Key.Parse]); for a
// key of your own, [keyfunc.Key.ParseWith] gives the parser to the key
// itself, where joined keys and every handler find it. The kind is the
// whole key's: for a joined key, such as "user_endpoint", the parser reads
// the whole text.
func WithIdentity(kind string, parse IdentityParser) Option {
	return optionFunc(func(c *config) error {
		if kind == "" || parse == nil {
			return fmt.Errorf("%w: admin: WithIdentity: empty kind or nil parser", sluice.ErrInvalidConfig)
		}
		c.parsers[kind] = parse
		return nil
	})
}
