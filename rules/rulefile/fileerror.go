package rulefile

import (
	"errors"
	"strconv"

	"github.com/sluicehq/sluice/internal/yamlkit"
	"github.com/sluicehq/sluice/rules"
)

// ErrInvalidFile reports a rule file [Parse], [LoadFile] or a [Watcher]
// refuses. Every such error is a [*FileError]; test with [errors.Is].
var ErrInvalidFile = errors.New("rulefile: invalid rule file")

// FileError describes why a rule file was refused: where (the file, the
// line, the rule or bypass entry, the field) and what is wrong. Its message
// reads
//
//	rulefile: limits.yaml:12: rule "per-ip": limit.burst: 3 is below the cost 5: no request could ever pass
//
// It wraps [ErrInvalidFile], [rules.ErrInvalidRule] when the problem is inside a
// rule or bypass entry, and the cause. Messages never quote an API key.
type FileError struct {
	// File is the path given to LoadFile or Watch, or the name given to
	// Parse.
	File string
	// Line is the 1-based line of the offending value, or 0 when there is
	// none (an empty file, a read error).
	Line int
	// Rule names the rule or bypass entry the problem is in; "" for a
	// problem outside them or in an entry that has no name yet.
	Rule string
	// Field is the offending field, inside a rule or bypass entry relative
	// to it ("limit.burst", "match.methods[1]"), otherwise from the top of
	// the file ("version", "defaults.on_fail"). For an unknown field it is
	// the mapping that holds it. "" when the problem is the whole file or
	// the whole entry.
	Field string
	// Err is what is wrong.
	Err error

	section string // "rule" or "bypass" when the problem is in an entry
	index   int    // 1-based position of an entry without a name
}

// Error returns the message shown above.
func (e *FileError) Error() string {
	scope := ""
	if e.section != "" {
		if e.Rule != "" {
			scope = e.section + " " + strconv.Quote(e.Rule)
		} else {
			scope = e.section + " #" + strconv.Itoa(e.index)
		}
	}
	return yamlkit.Message("rulefile", e.File, e.Line, scope, e.Field, e.Err)
}

// Unwrap returns [ErrInvalidFile], [rules.ErrInvalidRule] for a problem inside a
// rule or bypass entry, and the cause.
func (e *FileError) Unwrap() []error {
	errs := []error{ErrInvalidFile}
	if e.section != "" {
		errs = append(errs, rules.ErrInvalidRule)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}
