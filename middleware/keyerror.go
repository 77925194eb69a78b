package middleware

import (
	"errors"

	"github.com/sluicehq/sluice/keyfunc"
)

// keyErrorDetail is the problem detail [WriteError] gives a request a
// rule could not key: what was wrong with it, where the client can fix it,
// and never the value it sent.
func keyErrorDetail(err error) string {
	if dup := (*keyfunc.DuplicateHeaderError)(nil); errors.As(err, &dup) {
		return "The " + dup.Header + " header was duplicated: a rate limit policy reads it and needs it exactly once."
	}
	return "The request lacks the identity a rate limit policy requires."
}
