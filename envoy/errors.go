package envoy

import (
	"errors"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/yamlkit"
)

// ErrInvalidMapping reports a mapping file [ParseMapping] or [LoadMapping]
// refuses. Every such error is a [*MappingError], which also wraps
// [sluice.ErrInvalidConfig]; test with [errors.Is].
var ErrInvalidMapping = errors.New("envoy: invalid mapping file")

// MappingError describes why a mapping file was refused: where (the file,
// the line, the domain, the field) and what is wrong. Its message reads
//
//	envoy: ratelimit.yaml:14: domain "api": descriptors[0].rate_limit.unit: "sec" is not a unit (second, minute, hour, day, week, month, year)
//
// It wraps [ErrInvalidMapping], [sluice.ErrInvalidConfig] and the cause.
type MappingError struct {
	// File is the path given to LoadMapping, or the name given to
	// ParseMapping.
	File string
	// Line is the 1-based line of the offending value, or 0 when there is
	// none (an empty file, a read error).
	Line int
	// Domain is the domain of the document the problem is in, "" when it
	// is not known yet.
	Domain string
	// Field is the offending field, from the top of the document, such as
	// "descriptors[0].descriptors[1].rate_limit.unit"; for an unknown
	// field, the mapping that holds it. "" when the problem is the whole
	// document or file.
	Field string
	// Err is what is wrong.
	Err error
}

// Error returns the message shown above.
func (e *MappingError) Error() string {
	scope := ""
	if e.Domain != "" {
		scope = "domain " + quote(e.Domain)
	}
	return yamlkit.Message("envoy", e.File, e.Line, scope, e.Field, e.Err)
}

// Unwrap returns [ErrInvalidMapping], [sluice.ErrInvalidConfig] and the
// cause.
func (e *MappingError) Unwrap() []error {
	errs := []error{ErrInvalidMapping, sluice.ErrInvalidConfig}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// configError is an argument or option [New] refuses. It wraps
// [sluice.ErrInvalidConfig].
type configError struct{ msg string }

func (e *configError) Error() string { return "envoy: " + e.msg }
func (e *configError) Unwrap() error { return sluice.ErrInvalidConfig }

func invalidConfig(msg string) error { return &configError{msg: msg} }

// quote quotes text from a file or a request for a message, shortened.
func quote(s string) string { return yamlkit.Quote(s) }
