package keyfunc

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// Join returns a KeyFunc that combines the keys of fns, in order, into one
// key, for rules that count per combination, such as user and endpoint.
//
// The parts are encoded as netstrings (the decimal byte length, a colon, the
// bytes, a comma), so the encoding is injective: ("a:b", "c") gives
// "3:a:b,1:c," and ("a", "b:c") gives "1:a,3:b:c,", and no choice of parts
// can make two different lists of parts, of any length, collide.
//
// If a part fails, the joined KeyFunc fails with that error, wrapped so that
// it names the part and wraps [ErrNoKey]. A part that returns an empty key
// without an error is treated as a failure too (see [Strict]). Join returns
// an error if fns is empty or any of them is nil.
func Join(fns ...KeyFunc) (KeyFunc, error) {
	if len(fns) == 0 {
		return nil, errors.New("keyfunc: Join: no key functions")
	}
	for i, fn := range fns {
		if fn == nil {
			return nil, fmt.Errorf("keyfunc: Join: key function #%d is nil", i+1)
		}
	}
	fns = append([]KeyFunc(nil), fns...) // the caller may reuse its slice
	return func(r *http.Request) (string, error) {
		var b []byte
		for i, fn := range fns {
			part, err := fn(r)
			if err == nil && part == "" {
				err = errors.New("empty key")
			}
			if err != nil {
				return "", fmt.Errorf("keyfunc: Join part #%d: %w", i+1, wrapNoKey(err))
			}
			b = appendNetstring(b, part)
		}
		return string(b), nil
	}, nil
}

// appendNetstring appends s to b as a netstring: len(s) ":" s ",".
func appendNetstring(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	b = append(b, s...)
	return append(b, ',')
}
