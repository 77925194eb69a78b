package rulefile

import (
	"github.com/sluicehq/sluice/internal/yamlkit"
)

// decoder reads a parsed rule file, node by node, so that every error
// carries the line of the value it is about. It checks each mapping's keys
// itself: an unknown field, such as a misspelt one, is an error. The
// strict reading is yamlkit's, shared with the Envoy mapping files; the
// errors are *FileErrors naming the entry being read.
type decoder struct {
	*yamlkit.Reader
	file string
	env  *env
	// The entry being read, for error messages.
	section string // "rule", "bypass" or ""
	name    string
	index   int
	// prefix starts the field of every error, while a part of an entry is
	// read with the functions that read its top ("overrides[0]." for an
	// override's limit).
	prefix string
}

// newDecoder returns the decoder of one file.
func newDecoder(file string, e *env) *decoder {
	d := &decoder{file: file, env: e}
	d.Reader = yamlkit.NewReader(func(line int, field string, err error) error {
		return &FileError{
			File: d.file, Line: line, Rule: d.name, Field: d.prefix + field, Err: err,
			section: d.section, index: d.index,
		}
	})
	return d
}

// enter makes d describe errors as being inside the index-th (1-based)
// entry of section, named name ("" until known).
func (d *decoder) enter(section string, index int, name string) {
	d.section, d.index, d.name = section, index, name
}

// leave makes d describe errors as being outside any entry.
func (d *decoder) leave() { d.enter("", 0, "") }
