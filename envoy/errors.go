package envoy

import (
	"errors"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice"
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
	var b strings.Builder
	b.WriteString("envoy: ")
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	if e.Domain != "" {
		b.WriteString(": domain ")
		b.WriteString(quote(e.Domain))
	}
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
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

// maxQuoted is the longest text from a file or a request that a message
// repeats.
const maxQuoted = 64

// quote quotes text for an error message, shortened.
func quote(s string) string {
	if len(s) > maxQuoted {
		return strconv.Quote(s[:maxQuoted]) + "..."
	}
	return strconv.Quote(s)
}
