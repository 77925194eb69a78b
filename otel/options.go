package sluiceotel

import (
	"fmt"
	"slices"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/obs"
	"go.opentelemetry.io/otel/attribute"
)

// OtherRule is the sluice.rule attribute value under which a [Recorder]
// counts the rules beyond its [WithMaxRules] cap.
const OtherRule = "__other__"

// DefaultMaxRules is the number of distinct rule names a recorder keeps
// as sluice.rule values when [WithMaxRules] is not given.
const DefaultMaxRules = 1000

// DefaultBuckets returns the default explicit bucket boundaries, in
// seconds, of sluice.store.call.duration: 50 µs to 1 s in 1-2.5-5 steps,
// with the default latency budget (50 ms) as a boundary, as the metrics
// package's histogram has them. Each call returns a new slice.
func DefaultBuckets() []float64 { return obs.DefaultBuckets() }

// Option configures a [Recorder]. The With functions return them.
type Option interface {
	apply(*config) error
}

type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

type config struct {
	attrs      []attribute.KeyValue
	buckets    []float64
	maxRules   int
	spanEvents bool
}

func buildConfig(opts []Option) (config, error) {
	c := config{buckets: DefaultBuckets(), maxRules: DefaultMaxRules, spanEvents: true}
	for _, o := range opts {
		if o == nil {
			return c, invalidConfig("nil Option")
		}
		if err := o.apply(&c); err != nil {
			return c, err
		}
	}
	return c, nil
}

// ownKeys are the attribute keys of the recorder's instruments, which
// [WithAttributes] may not use.
var ownKeys = []attribute.Key{
	keyRule, keyOutcome, keyErrorType, keyAmbiguous, keyEndpoint, keyState,
	keyFrom, keyTo, keyPolicy, keyHandling, keyHotKeyTo,
}

// WithAttributes adds attrs to every measurement, to tell apart the
// recorders of several limiters sharing a meter provider, such as
// attribute.String("sluice.limiter", "api"). They must be valid and must
// not use the recorder's own keys (sluice.rule, error.type, ...). Default:
// none. Attributes of the whole process belong in the provider's
// resource instead.
func WithAttributes(attrs ...attribute.KeyValue) Option {
	return optionFunc(func(c *config) error {
		for _, kv := range attrs {
			if !kv.Valid() {
				return invalidConfig("WithAttributes: invalid attribute %q", string(kv.Key))
			}
			if slices.Contains(ownKeys, kv.Key) {
				return invalidConfig("WithAttributes: %q is an attribute of sluice's instruments", string(kv.Key))
			}
		}
		c.attrs = append(c.attrs, attrs...)
		return nil
	})
}

// WithBuckets sets the explicit bucket boundaries, in seconds, of
// sluice.store.call.duration, strictly increasing. Default:
// [DefaultBuckets]. The provider's views may still override them.
func WithBuckets(bounds ...float64) Option {
	return optionFunc(func(c *config) error {
		if len(bounds) == 0 {
			return invalidConfig("WithBuckets: no boundaries")
		}
		for i := 1; i < len(bounds); i++ {
			if !(bounds[i] > bounds[i-1]) {
				return invalidConfig("WithBuckets: boundaries not strictly increasing at %v", bounds[i])
			}
		}
		c.buckets = slices.Clone(bounds)
		return nil
	})
}

// WithMaxRules caps the distinct rule names recorded as sluice.rule
// values; the decisions of further names are recorded under [OtherRule].
// Default: [DefaultMaxRules]. Negative means no cap; 0 is an error.
func WithMaxRules(n int) Option {
	return optionFunc(func(c *config) error {
		if n == 0 {
			return invalidConfig("WithMaxRules: 0: give a positive cap, or a negative value for none")
		}
		c.maxRules = n
		return nil
	})
}

// WithoutSpanEvents stops the recorder from adding a sluice.refused event
// to the active span of each refused request (see [Recorder.Observe]).
func WithoutSpanEvents() Option {
	return optionFunc(func(c *config) error { c.spanEvents = false; return nil })
}

// configError is an argument or option [New] refuses. It wraps
// [sluice.ErrInvalidConfig].
type configError struct{ msg string }

func (e *configError) Error() string { return "sluiceotel: " + e.msg }

// Unwrap returns [sluice.ErrInvalidConfig].
func (e *configError) Unwrap() error { return sluice.ErrInvalidConfig }

func invalidConfig(format string, args ...any) error {
	return &configError{msg: fmt.Sprintf(format, args...)}
}
