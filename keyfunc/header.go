package keyfunc

import (
	"errors"
	"fmt"
	"net/http"
)

// Header returns a KeyFunc whose key is the value of the named request
// header, such as a tenant id set by an authenticating gateway.
//
// A missing header, an empty value (after trimming spaces and tabs) or a
// header sent more than once is an error wrapping [ErrNoKey]. Repeated
// headers are refused rather than picking one, because another component
// (say the authentication middleware) may read a different one, which would
// let a client be authenticated as one identity and rate-limited as another.
// Error messages name the header, never its value.
//
// The value is whatever the client sent: without a gateway that sets or
// verifies it, a client can pick a fresh key per request. Header returns an
// error if name is not a valid header field name.
func Header(name string) (KeyFunc, error) {
	canonical, err := headerName(name)
	if err != nil {
		return nil, err
	}
	return func(r *http.Request) (string, error) {
		return headerValue(r, canonical)
	}, nil
}

// APIKey returns a KeyFunc whose key is the API key in the named header,
// such as "X-API-Key". It follows the rules of [Header].
//
// The key is returned in clear text so that rules can tell clients apart;
// the rules and store layers hash it with a keyed hash before anything is
// stored, so no API key is ever stored or sent to Redis in clear. Error
// messages never include it. APIKey only identifies the client; it does not
// authenticate it, so run it after (or rely on) middleware that rejects
// unknown keys, or an attacker can rotate invented keys to get fresh buckets.
func APIKey(header string) (KeyFunc, error) {
	return Header(header)
}

// headerValue returns the single, non-empty value of a canonical header.
func headerValue(r *http.Request, canonical string) (string, error) {
	values := r.Header.Values(canonical)
	switch len(values) {
	case 0:
		return "", noKey("no %s header", canonical)
	case 1:
	default:
		return "", noKey("%s header sent %d times", canonical, len(values))
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
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			return "", fmt.Errorf("keyfunc: invalid header name %s", clip(name))
		}
	}
	return http.CanonicalHeaderKey(name), nil
}

// isTokenChar reports whether c may appear in an RFC 9110 token.
func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}
