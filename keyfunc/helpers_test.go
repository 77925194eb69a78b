package keyfunc_test

import (
	"errors"
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
func keyOf(t testing.TB, fn keyfunc.KeyFunc, r *http.Request) string {
	t.Helper()
	k, err := fn(r)
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if k == "" {
		t.Fatal("empty key without error")
	}
	return k
}
