package middleware

import (
	"errors"
	"net/http"

	"github.com/sluicehq/sluice/decide"
)

// Option configures a [Limiter]: the decide package's options (the
// budget, observer, logger, instances, header modes and clock:
// [decide.WithBudget], [decide.WithHeaders], ...), or the middleware's own
// below.
type Option = decide.Option

type config struct {
	deny    DenyHandler
	onError ErrorHandler
	// oneLiner is the name WithName gives a one-liner's rule; named
	// says WithName was given.
	oneLiner string
	named    bool
}

// DenyHandler answers a request a rule refused. When it runs, the
// rate-limit headers, Retry-After and Cache-Control are already set; it
// writes the status and the body.
type DenyHandler func(w http.ResponseWriter, r *http.Request, d Denial)

// WithDenyHandler replaces the default 429 response, [WriteDenial].
func WithDenyHandler(h DenyHandler) Option {
	return decide.Setting(func(c *config) error {
		if h == nil {
			return errors.New("WithDenyHandler: nil deny handler")
		}
		c.deny = h
		return nil
	})
}

// ErrorHandler answers a request the limiter could not decide: a rule
// could not key it (err wraps [decide.ErrKeyFailed]), its context set a
// negative cost ([decide.ErrInvalidCost]), or the store failed and a
// rule's policy is closed ([decide.ErrStoreFailed] and the store's error).
type ErrorHandler func(w http.ResponseWriter, r *http.Request, err error)

// WithErrorHandler replaces the default error responses, [WriteError].
func WithErrorHandler(h ErrorHandler) Option {
	return decide.Setting(func(c *config) error {
		if h == nil {
			return errors.New("WithErrorHandler: nil error handler")
		}
		c.onError = h
		return nil
	})
}
