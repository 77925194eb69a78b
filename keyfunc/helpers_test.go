package keyfunc_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/keyfunc"
)

// newReq returns a GET request from remote with the given header lines,
// each "Name: value"; a name may repeat.
func newReq(remote string, headers ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = remote
	for _, h := range headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			panic("bad header line " + h)
		}
		r.Header.Add(name, strings.TrimSpace(value))
	}
	return r
}

// prefixes parses CIDR strings or fails the test.
func prefixes(t testing.TB, cidrs ...string) []netip.Prefix {
	t.Helper()
	p, err := keyfunc.ParsePrefixes(cidrs...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wantNoKey fails the test unless err wraps ErrNoKey and has a keyfunc:
// message of bounded length.
func wantNoKey(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("got nil error, want one wrapping ErrNoKey")
	}
	if !errors.Is(err, keyfunc.ErrNoKey) {
		t.Fatalf("error %q does not wrap ErrNoKey", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "keyfunc: ") || len(msg) > 300 {
		t.Fatalf("error message %q: want a short message starting with \"keyfunc: \"", msg)
	}
}

// keyOf runs fn and fails the test on error.
func keyOf(t testing.TB, key any, r *http.Request) string {
	t.Helper()
	k, err := fnOf(key)(r)
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if k == "" {
		t.Fatal("empty key without error")
	}
	return k
}

// fnOf returns the function of a keyfunc.Key or a KeyFunc.
func fnOf(key any) keyfunc.KeyFunc {
	switch k := key.(type) {
	case keyfunc.Key:
		return k.Func()
	case keyfunc.KeyFunc:
		return k
	}
	panic(fmt.Sprintf("fnOf: %T", key))
}

// wantPanic fails t unless fn panics.
func wantPanic(t *testing.T, what string, fn func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	fn()
}

// must returns v, or panics if err is not nil: for configuration fixed in
// a test.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
