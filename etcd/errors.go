package etcd

import (
	"errors"

	"github.com/sluicehq/sluice"
)

// ErrNoRules reports a key that holds no rules: missing when [Watch] reads
// it first, or deleted since. A deleted key keeps the last good rules in
// use, as a refused document does. It arrives wrapped in a
// *rulefile.FileError.
var ErrNoRules = errors.New("etcd: the key holds no rules (it is missing or was deleted)")

// configError is an argument or option [Watch] or [Publish] refuses. It
// wraps [sluice.ErrInvalidConfig].
type configError struct{ msg string }

func (e *configError) Error() string { return "etcd: " + e.msg }
func (e *configError) Unwrap() error { return sluice.ErrInvalidConfig }

func invalidConfig(msg string) error { return &configError{msg: msg} }
