package keyfunc

import (
	"errors"
	"fmt"
	"net/http"
)

// KeyFunc extracts the identity a rate-limit rule counts against from a
// request. It returns an error wrapping [ErrNoKey] when it cannot, and one
// wrapping [ErrMissing] (or, httprate's convention, "" and no error) when
// the request carries no identity at all (see [Key]).
//
// KeyFunc is an alias of the plain function type, so values of any named
// type with this underlying signature, such as httprate.KeyFunc from
// github.com/go-chi/httprate, can be assigned to it and back.
type KeyFunc = func(*http.Request) (string, error)

// ErrNoKey reports that no key could be resolved for a request. Every
// failure of the functions in this package wraps it; test with [errors.Is].
var ErrNoKey = errors.New("keyfunc: no key")

// GlobalKey is the identity [Global] gives every request.
const GlobalKey = "global"

// Global returns the Key, of kind "global", that gives every request the
// same identity, [GlobalKey]: one bucket shared by all clients, for global
// rules such as a cap on the total request rate of a service.
func Global() Key {
	return Key{kind: "global", form: globalForm, fn: func(*http.Request) (string, error) { return GlobalKey, nil }}
}

// Strict wraps a KeyFunc that may not follow this package's rules, such as
// a custom or third-party one, so that it does: an error that does not wrap
// [ErrNoKey] is wrapped, and an empty key with a nil error (httprate's "no
// key", which would otherwise put every such request into one shared
// bucket) becomes an error wrapping [ErrMissing]: no identity, as
// [Key.Identity] reports it.
//
// Strict panics if fn is nil.
func Strict(fn KeyFunc) KeyFunc {
	if fn == nil {
		panic("keyfunc: Strict: nil KeyFunc")
	}
	return func(r *http.Request) (string, error) {
		key, err := fn(r)
		if err != nil {
			return "", wrapNoKey(err)
		}
		if key == "" {
			return "", errEmptyIdentity
		}
		return key, nil
	}
}

// noKey returns an error that wraps ErrNoKey, with the message
// "keyfunc: no key: " followed by the formatted text.
func noKey(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrNoKey}, args...)...)
}

// wrapNoKey makes err wrap ErrNoKey, keeping err itself reachable with
// errors.Is and errors.As.
func wrapNoKey(err error) error {
	if errors.Is(err, ErrNoKey) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrNoKey, err)
}
