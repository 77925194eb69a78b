package keyfunc_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/keyfunc"
)

func TestKinds(t *testing.T) {
	user := keyfunc.User(func(context.Context) (string, bool) { return "u", true })
	cases := []struct {
		key  keyfunc.Key
		want string
	}{
		{keyfunc.ClientIP(), "ip"},
		{must(keyfunc.IP(keyfunc.IPConfig{IPv6Prefix: 48})), "ip"},
		{keyfunc.Global(), "global"},
		{keyfunc.APIKey("X-API-Key"), "api_key"},
		{keyfunc.Header("x-tenant"), "header:X-Tenant"},
		{user, "user"},
		{keyfunc.Endpoint(), "endpoint"},
		{keyfunc.EndpointFromMux(http.NewServeMux()), "endpoint"},
		{keyfunc.Join(user, keyfunc.Endpoint()), "user_endpoint"},
		{keyfunc.New("tenant", func(*http.Request) (string, error) { return "t", nil }), "tenant"},
	}
	for _, tc := range cases {
		if got := tc.key.Kind(); got != tc.want {
			t.Errorf("kind %q, want %q", got, tc.want)
		}
		if tc.key.IsZero() || tc.key.IsRequired() {
			t.Errorf("%s: zero %v, required %v", tc.want, tc.key.IsZero(), tc.key.IsRequired())
		}
	}
	if !(keyfunc.Key{}).IsZero() {
		t.Error("the zero Key is not zero")
	}
}

func TestNewPanicsOnWhatCodeFixes(t *testing.T) {
	fn := func(*http.Request) (string, error) { return "x", nil }
	wantPanic(t, "New(nil)", func() { keyfunc.New("k", nil) })
	for _, kind := range []string{"", "two words", "tab\t", "é"} {
		wantPanic(t, fmt.Sprintf("New(%q)", kind), func() { keyfunc.New(kind, fn) })
	}
}

func TestRequired(t *testing.T) {
	absent := keyfunc.New("tenant", func(*http.Request) (string, error) {
		return "", fmt.Errorf("no tenant: %w", keyfunc.ErrMissing)
	})
	_, err := absent.Identity(newReq("192.0.2.1:1"))
	if !errors.Is(err, keyfunc.ErrNoKey) || !errors.Is(err, keyfunc.ErrMissing) {
		t.Fatalf("error %v wraps ErrNoKey %v, ErrMissing %v; want both", err, errors.Is(err, keyfunc.ErrNoKey), errors.Is(err, keyfunc.ErrMissing))
	}
	if !absent.Skips(err) || absent.Required().Skips(err) || !absent.Required().IsRequired() {
		t.Fatal("a missing identity: skipped by default, refused when required")
	}
	if absent.Skips(errors.New("other")) {
		t.Fatal("an error that does not wrap ErrMissing skips")
	}
	// Join carries the parts' requirement and the part's missing identity.
	joined := keyfunc.Join(keyfunc.Global(), absent.Required())
	if !joined.IsRequired() {
		t.Fatal("Join of a required part is not required")
	}
	if _, err := keyfunc.Join(keyfunc.Global(), absent).Identity(newReq("192.0.2.1:1")); !errors.Is(err, keyfunc.ErrMissing) {
		t.Fatalf("Join's error %v hides the missing part", err)
	}
}

// A key function of httprate's shape says "no key" with "" and no error:
// every Key reports that identity missing, so the rule skips the request
// (refuses it when required) rather than counting it in a bucket shared by
// every request without one, directly, through Join and through Strict.
func TestEmptyIdentityIsMissing(t *testing.T) {
	userOf := func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil }
	account := keyfunc.New("account", userOf)
	cases := map[string]keyfunc.Key{
		"New":         account,
		"Join":        keyfunc.Join(keyfunc.ClientIP(), account),
		"New(Strict)": keyfunc.New("account", keyfunc.Strict(userOf)),
	}
	for name, key := range cases {
		t.Run(name, func(t *testing.T) {
			id, err := key.Identity(newReq("192.0.2.1:1"))
			wantNoKey(t, err)
			if id != "" || !errors.Is(err, keyfunc.ErrMissing) {
				t.Fatalf("got %q, %v; want no identity, an error wrapping ErrMissing", id, err)
			}
			if !key.Skips(err) || key.Required().Skips(err) {
				t.Fatalf("error %q: Skips %v, Required().Skips %v; want true, false", err, key.Skips(err), key.Required().Skips(err))
			}
			if got := keyOf(t, key, newReq("192.0.2.1:1", "X-User: alice")); got == "" {
				t.Fatal("a request with the identity has none")
			}
		})
	}
	// The function itself is kept as given, for code (httprate) that takes
	// a plain KeyFunc.
	if id, err := account.Func()(newReq("192.0.2.1:1")); id != "" || err != nil {
		t.Fatalf("Func() = %q, %v; want the function as given", id, err)
	}
}
