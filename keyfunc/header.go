package keyfunc

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/sluicehq/sluice/internal/ident"
)

// Header returns the Key, of kind "header:" and the canonical header name,
// whose identity is the value of the named request header, such as a
// tenant id set by an authenticating gateway.
//
// A request without the header is skipped by the rule, or refused if the
// Key is [Key.Required] (see [Key]): its error wraps [ErrMissing]. An
// empty value (after trimming spaces and tabs) is an error wrapping
// [ErrNoKey]; a header sent more than once is a [*DuplicateHeaderError],
// which wraps ErrNoKey too. Repeated
// headers are refused rather than picking one, because another component
// (say the authentication middleware) may read a different one, which would
// let a client be authenticated as one identity and rate-limited as another.
// Error messages name the header, never its value.
//
// The value is whatever the client sent: without a gateway that sets or
// verifies it, a client can pick a fresh key per request.
//
// Header panics if name is not a valid header field name, as
// regexp.MustCompile does for a bad pattern: names are fixed in code. A
// valid name is an RFC 9110 token: letters, digits and !#$%&'*+-.^_`|~.
func Header(name string) Key {
	return headerKey("header:", name)
}

func headerKey(kindPrefix, name string) Key {
	canonical, err := headerName(name)
	if err != nil {
		panic(err)
	}
	kind, f := kindPrefix+canonical, headerForm(canonical)
	if kindPrefix == apiKeyKind {
		kind, f = apiKeyKind, apiKeyForm(canonical)
	}
	return Key{kind: kind, form: f, fn: func(r *http.Request) (string, error) {
		return headerValue(r, canonical)
	}}
}

// apiKeyKind is the kind of APIKey's keys, whatever the header.
const apiKeyKind = "api_key"

// APIKey returns the Key, of kind "api_key", whose identity is the API key
// in the named header, such as "X-API-Key". It follows the rules of
// [Header]: a request without the header is skipped by the rule unless the
// Key is [Key.Required], and APIKey panics on an invalid header name.
//
// The key is returned in clear text so that rules can tell clients apart;
// the rules and store layers hash it with a keyed hash before anything is
// stored, so no API key is ever stored or sent to Redis in clear. Error
// messages never include it. APIKey only identifies the client; it does not
// authenticate it, so run it after (or rely on) middleware that rejects
// unknown keys, or an attacker can rotate invented keys to get fresh buckets.
func APIKey(header string) Key {
	return headerKey(apiKeyKind, header)
}

// headerValue returns the single, non-empty value of a canonical header.
func headerValue(r *http.Request, canonical string) (string, error) {
	values := r.Header.Values(canonical)
	switch len(values) {
	case 0:
		return "", missing("no %s header", canonical)
	case 1:
	default:
		return "", &DuplicateHeaderError{Header: canonical, Count: len(values)}
	}
	v := trimOWS(values[0])
	if v == "" {
		return "", noKey("empty %s header", canonical)
	}
	return v, nil
}

// headerName validates a header field name (an RFC 9110 token) and returns
// its canonical form.
func headerName(name string) (string, error) {
	if name == "" {
		return "", errors.New("keyfunc: empty header name")
	}
	if !ident.IsToken(name) {
		return "", fmt.Errorf("keyfunc: invalid header name %s", clip(name))
	}
	return http.CanonicalHeaderKey(name), nil
}

// DuplicateHeaderError reports a request that sent the header a key reads
// ([Header], [APIKey]) more than once: which one counts is ambiguous, so
// the request is refused, never skipped, whether or not the Key is
// required. It wraps [ErrNoKey] (not [ErrMissing]); find it with
// errors.As. The middleware's default error handler answers 400 saying
// the header was duplicated.
type DuplicateHeaderError struct {
	// Header is the header's canonical name.
	Header string
	// Count is how many times the request sent it.
	Count int
}

func (e *DuplicateHeaderError) Error() string {
	return fmt.Sprintf("keyfunc: no key: %s header duplicated (sent %d times)", e.Header, e.Count)
}

// Is reports whether target is [ErrNoKey], which e wraps.
func (e *DuplicateHeaderError) Is(target error) bool { return target == ErrNoKey }
