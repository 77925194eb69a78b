package keyfunc_test

import (
	"context"
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
	}{
		{"present", []string{"X-API-Key: " + secret}, secret},
		{"lowercase_on_wire", []string{"x-api-key: " + secret}, secret},
		{"trimmed", []string{"X-API-Key: \t" + secret + " "}, secret},
		{"missing", nil, ""},
		{"empty", []string{"X-API-Key: "}, ""},
		{"blank", []string{"X-API-Key: \t "}, ""},
		{"repeated_refused", []string{"X-API-Key: " + secret, "X-API-Key: other"}, ""},
		{"other_header_ignored", []string{"Authorization: Bearer " + secret}, ""},
	}
	ctors := map[string]func(string) (keyfunc.KeyFunc, error){
		"Header": keyfunc.Header,
		"APIKey": keyfunc.APIKey,
	}
	for cname, ctor := range ctors {
		fn, err := ctor("x-api-key")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range cases {
			t.Run(cname+"/"+tc.name, func(t *testing.T) {
				r := newReq("192.0.2.1:1", tc.headers...)
				got, err := fn(r)
				if tc.want == "" {
					wantNoKey(t, err)
					if strings.Contains(err.Error(), "SECRET") {
						t.Fatalf("error %q leaks the header value", err)
					}
					if !strings.Contains(err.Error(), "X-Api-Key") {
						t.Fatalf("error %q does not name the header", err)
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
		if _, err := keyfunc.Header(bad); err == nil {
			t.Errorf("Header(%q) accepted", bad)
		}
		if _, err := keyfunc.APIKey(bad); err == nil {
			t.Errorf("APIKey(%q) accepted", bad)
		}
	}
}

type userCtxKey struct{}

func TestUser(t *testing.T) {
	lookup := func(ctx context.Context) (string, bool) {
		id, ok := ctx.Value(userCtxKey{}).(string)
		return id, ok
	}
	fn, err := keyfunc.User(lookup)
	if err != nil {
		t.Fatal(err)
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
			k, err := fn(r)
			wantNoKey(t, err)
			if k != "" {
				t.Fatalf("key %q with error", k)
			}
		})
	}
	if _, err := keyfunc.User(nil); err == nil {
		t.Fatal("User(nil) accepted")
	}
}
