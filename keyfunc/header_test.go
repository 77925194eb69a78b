package keyfunc_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/keyfunc"
)

func TestHeaderAndAPIKey(t *testing.T) {
	const secret = "sk_live_SECRET123"
	cases := []struct {
		name    string
		headers []string
		want    string // "" means an error wrapping ErrNoKey
		missing bool   // the error wraps ErrMissing: the rule skips the request
	}{
		{"present", []string{"X-API-Key: " + secret}, secret, false},
		{"lowercase_on_wire", []string{"x-api-key: " + secret}, secret, false},
		{"trimmed", []string{"X-API-Key: \t" + secret + " "}, secret, false},
		{"missing", nil, "", true},
		{"empty", []string{"X-API-Key: "}, "", false},
		{"blank", []string{"X-API-Key: \t "}, "", false},
		{"repeated_refused", []string{"X-API-Key: " + secret, "X-API-Key: other"}, "", false},
		{"other_header_ignored", []string{"Authorization: Bearer " + secret}, "", true},
	}
	ctors := map[string]struct {
		ctor func(string) keyfunc.Key
		kind string
	}{
		"Header": {keyfunc.Header, "header:X-Api-Key"},
		"APIKey": {keyfunc.APIKey, "api_key"},
	}
	for cname, c := range ctors {
		key := c.ctor("x-api-key")
		if key.Kind() != c.kind {
			t.Errorf("%s kind %q, want %q", cname, key.Kind(), c.kind)
		}
		for _, tc := range cases {
			t.Run(cname+"/"+tc.name, func(t *testing.T) {
				r := newReq("192.0.2.1:1", tc.headers...)
				got, err := key.Identity(r)
				if tc.want == "" {
					wantNoKey(t, err)
					if errors.Is(err, keyfunc.ErrMissing) != tc.missing {
						t.Fatalf("error %q: wraps ErrMissing %v, want %v", err, !tc.missing, tc.missing)
					}
					if key.Skips(err) != tc.missing || key.Required().Skips(err) {
						t.Fatalf("error %q: Skips %v, Required().Skips %v; want %v, false", err, key.Skips(err), key.Required().Skips(err), tc.missing)
					}
					if strings.Contains(err.Error(), "SECRET") {
						t.Fatalf("error %q leaks the header value", err)
					}
					if !strings.Contains(err.Error(), "X-Api-Key") {
						t.Fatalf("error %q does not name the header", err)
					}
					var dup *keyfunc.DuplicateHeaderError
					if isDup := errors.As(err, &dup); isDup != (len(tc.headers) == 2) {
						t.Fatalf("error %q: a *DuplicateHeaderError %v, want %v", err, isDup, !isDup)
					} else if isDup && (dup.Header != "X-Api-Key" || dup.Count != 2 || !strings.Contains(err.Error(), "duplicated")) {
						t.Fatalf("error %q: %+v, want header X-Api-Key sent 2 times, said duplicated", err, *dup)
					}
					return
				}
				if err != nil || got != tc.want {
					t.Fatalf("got %q, %v; want %q", got, err, tc.want)
				}
			})
		}
	}
	for _, bad := range []string{"", "X API Key", "X-Key:", "é"} {
		wantPanic(t, "Header("+bad+")", func() { keyfunc.Header(bad) })
		wantPanic(t, "APIKey("+bad+")", func() { keyfunc.APIKey(bad) })
	}
}

type userCtxKey struct{}

func TestUser(t *testing.T) {
	lookup := func(ctx context.Context) (string, bool) {
		id, ok := ctx.Value(userCtxKey{}).(string)
		return id, ok
	}
	fn := keyfunc.User(lookup)
	if fn.Kind() != "user" {
		t.Errorf("kind %q", fn.Kind())
	}
	with := func(v any) *http.Request {
		r := newReq("192.0.2.1:1")
		if v != nil {
			r = r.WithContext(context.WithValue(r.Context(), userCtxKey{}, v))
		}
		return r
	}
	if got := keyOf(t, fn, with("user-42")); got != "user-42" {
		t.Fatalf("key %q", got)
	}
	for name, r := range map[string]*http.Request{
		"anonymous":  with(nil),
		"empty_id":   with(""),
		"wrong_type": with(42),
	} {
		t.Run(name, func(t *testing.T) {
			k, err := fn.Identity(r)
			wantNoKey(t, err)
			if !fn.Skips(err) {
				t.Fatalf("error %q: a request without a user is not skipped", err)
			}
			if k != "" {
				t.Fatalf("key %q with error", k)
			}
		})
	}
	wantPanic(t, "User(nil)", func() { keyfunc.User(nil) })
}
