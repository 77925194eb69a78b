package admin

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
)

// ErrInvalidConfig reports an argument or option [New] cannot work with,
// such as a nil store or an empty hash secret. Test for it with
// [errors.Is].
var ErrInvalidConfig = errors.New("admin: invalid configuration")

// Option configures [New].
type Option func(*config) error

type config struct {
	log        *slog.Logger
	observer   sluice.Observer
	ipv6Prefix int
	secret     []byte
	parsers    map[string]IdentityParser
}

// IdentityParser turns an identity as an operator types it into the key a
// rule's key function returns for that identity, or an error saying why
// the text is not one.
type IdentityParser func(typed string) (string, error)

// WithLogger sets where resets are logged. Default: [slog.Default].
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("%w: WithLogger: nil logger", ErrInvalidConfig)
		}
		c.log = l
		return nil
	}
}

// WithObserver reports each reset to o, if o implements
// [sluice.ResetObserver] (the metrics package's Collector does). Default:
// none.
func WithObserver(o sluice.Observer) Option {
	return func(c *config) error { c.observer = o; return nil }
}

// WithIPv6Prefix sets how ip identities are grouped: as the rules' key
// function groups them (see [keyfunc.IPConfig]). Default: 64.
func WithIPv6Prefix(bits int) Option {
	return func(c *config) error {
		if _, err := keyfunc.IPKey(keyfunc.Normalize(ipv6Probe), bits); err != nil {
			return fmt.Errorf("%w: WithIPv6Prefix: %w", ErrInvalidConfig, err)
		}
		c.ipv6Prefix = bits
		return nil
	}
}

// WithHashSecret sets the key of the hash under which resets log
// identities. Give every instance the same secret to correlate their
// logs. Default: a random key per handler.
func WithHashSecret(secret []byte) Option {
	return func(c *config) error {
		if len(secret) == 0 {
			return fmt.Errorf("%w: WithHashSecret: empty secret", ErrInvalidConfig)
		}
		c.secret = append([]byte(nil), secret...)
		return nil
	}
}

// WithIdentity sets the parser of key kind's identities, for a custom
// kind or to replace a built-in one (see the package documentation).
func WithIdentity(kind string, parse IdentityParser) Option {
	return func(c *config) error {
		if kind == "" || parse == nil {
			return fmt.Errorf("%w: WithIdentity: empty kind or nil parser", ErrInvalidConfig)
		}
		c.parsers[kind] = parse
		return nil
	}
}
