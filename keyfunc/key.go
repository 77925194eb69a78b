package keyfunc

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
)

// Key is what a rate-limit rule counts by: a [KeyFunc] and its kind, the
// name of what the function returns ("ip", "api_key", "user", ...).
//
// The kind is part of every bucket key, so two rules keyed by different
// kinds never share buckets, and a rule written in Go and the same rule in
// a rule file (whose key field names the same kind) count in the same
// buckets. The constructors of this package set it: [ClientIP] and [IP]
// give "ip", [APIKey] "api_key", [Header] "header:" and the canonical
// header name, [User] "user", the endpoint functions "endpoint", [Global]
// "global", and [Join] the kinds of its parts joined by "_"
// ("user_endpoint"). A function of your own gets its kind from [New].
//
// # Missing identity
//
// A request may lack the identity a key reads: no API key header, no
// signed-in user. By default a rule keyed that way does not apply to such
// a request (the request is neither counted nor refused by it; give
// anonymous requests a rule of their own, keyed by IP). [Key.Required]
// makes the request fail instead: the middleware answers 400 Bad Request.
// An identity that is present but unusable (a header sent twice, an empty
// value) is always an error, never a skip. Key functions report a missing
// identity with an error wrapping [ErrMissing], or, as httprate's key
// functions do, by returning "" without an error: [Key.Identity] turns an
// empty identity into an error wrapping ErrMissing, so it never becomes a
// bucket shared by every request that has none.
//
// The zero Key has no function; rules refuse it.
type Key struct {
	kind     string
	fn       KeyFunc
	required bool
	form     *form // how an operator writes an identity; nil: by kind (see Key.Parse)
	parts    []Key // a joined key's parts (see Join); nil for a whole key
}

// ErrMissing reports that a request does not carry the identity a key
// reads at all (see [Key]). Errors wrapping it also wrap [ErrNoKey]. A
// KeyFunc of your own returns an error wrapping ErrMissing, such as
// fmt.Errorf("no tenant: %w", keyfunc.ErrMissing), for requests its rule
// should skip; returning "" without an error means the same.
var ErrMissing error = missingError("identity missing")

// errEmptyIdentity is what [Key.Identity] returns for a function that
// returned "" without an error: no identity.
var errEmptyIdentity error = missingError("the key function returned an empty identity")

// New returns the Key of a KeyFunc of your own, such as a tenant id read
// from a verified token: New("tenant", tenantOf). kind names what fn
// returns (see [Key]); it must be printable ASCII without spaces. New
// panics if kind is invalid or fn is nil: both are fixed in code.
//
// fn follows httprate's convention or this package's: a request for which
// it returns "" (and no error), or an error wrapping [ErrMissing], carries
// no identity and is skipped by the rule (refused with 400 if the Key is
// [Key.Required]); any other error refuses the request.
//
// An operator names one of its identities (see [Key.Parse]) as fn returns
// it; when fn transforms what it reads (lower-cases a header, looks an id
// up), give the Key a parser with [Key.ParseWith].
func New(kind string, fn KeyFunc) Key {
	if fn == nil {
		panic("keyfunc: New: nil KeyFunc")
	}
	if !validKind(kind) {
		panic(fmt.Sprintf("keyfunc: New: invalid kind %s: want printable ASCII without spaces", clip(kind)))
	}
	return Key{kind: kind, fn: fn}
}

// Kind returns the key's kind.
func (k Key) Kind() string { return k.kind }

// Parts returns the keys a joined key was made of ([Join]), in order, or
// nil for a key that is not a join. A join's kind is its parts' kinds
// joined by "_", which cannot be split back when a part's kind holds "_"
// itself (api_key, a header's name): read the parts instead.
func (k Key) Parts() []Key { return slices.Clone(k.parts) }

// Func returns the key's function, for code that takes a plain KeyFunc
// (such as github.com/go-chi/httprate). It is the function as given: one
// made with [New] may return "" where [Key.Identity] reports the identity
// missing.
func (k Key) Func() KeyFunc { return k.fn }

// Identity returns the identity r is counted against, or an error wrapping
// [ErrNoKey] (and [ErrMissing] when r carries no identity at all, including
// when the key's function returned "" without an error).
func (k Key) Identity(r *http.Request) (string, error) {
	id, err := k.fn(r)
	if err == nil && id == "" {
		return "", errEmptyIdentity
	}
	return id, err
}

// IsZero reports whether k is the zero Key, which has no function.
func (k Key) IsZero() bool { return k.fn == nil }

// Required returns k, except that a request without the identity fails
// (the middleware answers 400) rather than being skipped by the rule.
func (k Key) Required() Key {
	k.required = true
	return k
}

// IsRequired reports whether a request without the identity fails rather
// than being skipped (see [Key.Required]).
func (k Key) IsRequired() bool { return k.required }

// Skips reports whether err, an error k's function returned, means that
// the rule should not apply to the request: the identity is missing and k
// is not required.
func (k Key) Skips(err error) bool {
	return !k.required && errors.Is(err, ErrMissing)
}

func validKind(kind string) bool {
	if kind == "" {
		return false
	}
	for i := 0; i < len(kind); i++ {
		if c := kind[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// missingError is the error of a missing identity: it wraps both ErrNoKey
// and ErrMissing, with the message format of this package.
type missingError string

func (e missingError) Error() string { return "keyfunc: no key: " + string(e) }

func (e missingError) Is(target error) bool {
	return target == ErrNoKey || target == ErrMissing
}

// missing returns an error wrapping ErrMissing and ErrNoKey, with the
// message "keyfunc: no key: " followed by the formatted text.
func missing(format string, args ...any) error {
	return missingError(fmt.Sprintf(format, args...))
}
