package keyfunc

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Join returns the Key that combines the identities of keys, in order, into
// one, for rules that count per combination, such as user and endpoint. Its
// kind is the kinds of keys joined by "_" ("user_endpoint"), and it is
// [Key.Required] if any of keys is.
//
// The parts are encoded as netstrings (the decimal byte length, a colon, the
// bytes, a comma), so the encoding is injective: ("a:b", "c") gives
// "3:a:b,1:c," and ("a", "b:c") gives "1:a,3:b:c,", and no choice of parts
// can make two different lists of parts, of any length, collide.
//
// An operator writes an identity of the joined Key as its parts'
// identities in order, separated by spaces (see [Key.Parse]), or one per
// part ([Key.ParseParts]).
//
// If a part fails, the joined Key fails with that error, wrapped so that
// it names the part and wraps [ErrNoKey] (and [ErrMissing] when the part's
// identity is missing). A part that returns an empty key without an error
// has no identity, as with [Key.Identity]: the joined Key's identity is
// missing too. Join panics if keys is empty or one of them is the zero Key.
func Join(keys ...Key) Key {
	if len(keys) == 0 {
		panic("keyfunc: Join: no keys")
	}
	kinds := make([]string, len(keys))
	fns := make([]KeyFunc, len(keys))
	required := false
	for i, k := range keys {
		if k.IsZero() {
			panic(fmt.Sprintf("keyfunc: Join: key #%d is the zero Key", i+1))
		}
		kinds[i], fns[i] = k.kind, k.fn
		required = required || k.required
	}
	parts := append([]Key(nil), keys...)
	return Key{kind: strings.Join(kinds, "_"), required: required, form: joinForm(parts), parts: parts, fn: func(r *http.Request) (string, error) {
		var b []byte
		for i, fn := range fns {
			part, err := fn(r)
			if err == nil && part == "" {
				err = errEmptyIdentity
			}
			if err != nil {
				return "", fmt.Errorf("keyfunc: Join part #%d: %w", i+1, wrapNoKey(err))
			}
			b = appendNetstring(b, part)
		}
		return string(b), nil
	}}
}

// appendNetstring appends s to b as a netstring: len(s) ":" s ",".
func appendNetstring(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	b = append(b, s...)
	return append(b, ',')
}
