package keyfunc_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/keyfunc"
)

type userCtx struct{}

var users = keyfunc.User(func(ctx context.Context) (string, bool) {
	u, ok := ctx.Value(userCtx{}).(string)
	return u, ok
})

// routed returns the request a handler behind mux.Handle(pattern) sees.
func routed(t testing.TB, pattern string, r *http.Request) *http.Request {
	t.Helper()
	var got *http.Request
	mux := http.NewServeMux()
	mux.HandleFunc(pattern, func(_ http.ResponseWriter, r *http.Request) { got = r })
	mux.ServeHTTP(httptest.NewRecorder(), r)
	if got == nil {
		t.Fatalf("%s %s: not routed by %q", r.Method, r.URL.Path, pattern)
	}
	return got
}

func withUser(r *http.Request, user string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), userCtx{}, user))
}

// TestParseGivesTheLiveIdentity: for every kind of key, the identity an
// operator types is read into exactly the identity the key gives a request
// of that identity.
func TestParseGivesTheLiveIdentity(t *testing.T) {
	ip48 := must(keyfunc.IP(keyfunc.IPConfig{IPv6Prefix: 48}))
	lower := keyfunc.New("tenant", func(r *http.Request) (string, error) {
		return strings.ToLower(r.Header.Get("X-Tenant")), nil
	}).ParseWith(func(s string) (string, error) { return strings.ToLower(s), nil })
	post := func() *http.Request { return httptest.NewRequest(http.MethodPost, "/login", nil) }
	cases := []struct {
		name    string
		key     keyfunc.Key
		req     func() *http.Request
		typed   string
		parts   []string // typed one per part, instead of typed
		pattern string   // route the request through a mux with this pattern
	}{
		{name: "ipv4", key: keyfunc.ClientIP(), req: func() *http.Request { return newReq("192.0.2.7:1") }, typed: "192.0.2.7"},
		{name: "ipv4 mapped, with a port", key: keyfunc.ClientIP(), req: func() *http.Request { return newReq("192.0.2.7:1") }, typed: "[::ffff:192.0.2.7]:80"},
		{name: "ipv6 /64", key: keyfunc.ClientIP(), req: func() *http.Request { return newReq("[2001:db8:1:2::7]:1") }, typed: "2001:db8:1:2:ffff::1"},
		{name: "ipv6 by the key's /48", key: ip48, req: func() *http.Request { return newReq("[2001:db8:1:2::7]:1") }, typed: " 2001:db8:1:ff::1\t"},
		{name: "header", key: keyfunc.Header("X-Tenant"), req: func() *http.Request { return newReq("192.0.2.7:1", "X-Tenant: Acme  Corp") }, typed: "Acme  Corp"},
		{name: "api key", key: keyfunc.APIKey("X-API-Key"), req: func() *http.Request { return newReq("192.0.2.7:1", "X-API-Key: k1") }, typed: "k1"},
		{name: "user", key: users, req: func() *http.Request { return withUser(newReq("192.0.2.7:1"), "alice") }, typed: "alice"},
		{name: "global", key: keyfunc.Global(), req: func() *http.Request { return newReq("192.0.2.7:1") }, typed: ""},
		{name: "endpoint", key: keyfunc.Endpoint(), req: post, pattern: "POST /login", typed: "POST /login"},
		{name: "endpoint, lower case", key: keyfunc.Endpoint(), req: post, pattern: "POST /login", typed: "post\t/login"},
		{name: "endpoint, method-less pattern", key: keyfunc.Endpoint(), req: post, pattern: "/login", typed: "POST /login"},
		{name: "endpoint, custom method", key: keyfunc.Endpoint(), req: func() *http.Request { return httptest.NewRequest("PURGE", "/cache", nil) },
			pattern: "PURGE /cache", typed: "PURGE /cache"},
		{name: "endpoint from mux, unmatched", key: keyfunc.EndpointFromMux(http.NewServeMux()), req: post, typed: "POST <unmatched>"},
		{name: "endpoint from mux, other method", key: keyfunc.EndpointFromMux(http.NewServeMux()), req: func() *http.Request { return httptest.NewRequest("BREW", "/pot", nil) },
			typed: "<other> <unmatched>"},
		{name: "user endpoint", key: keyfunc.Join(users, keyfunc.Endpoint()), req: func() *http.Request { return withUser(post(), "alice") },
			pattern: "POST /login", typed: "alice POST /login"},
		{name: "user with spaces, endpoint", key: keyfunc.Join(users, keyfunc.Endpoint()), req: func() *http.Request { return withUser(post(), "Alice  B. Smith") },
			pattern: "POST /login", typed: "Alice  B. Smith POST /login"},
		{name: "endpoint, header", key: keyfunc.Join(keyfunc.Endpoint(), keyfunc.Header("X-User")), req: func() *http.Request {
			r := post()
			r.Header.Set("X-User", "a b")
			return r
		}, pattern: "POST /login", typed: "POST /login a b"},
		{name: "header, endpoint, parts", key: keyfunc.Join(keyfunc.Header("X-User"), keyfunc.Endpoint()), req: func() *http.Request {
			r := post()
			r.Header.Set("X-User", "alice")
			return r
		}, pattern: "POST /login", parts: []string{"alice", "POST /login"}},
		{name: "two headers", key: keyfunc.Join(keyfunc.Header("X-A"), keyfunc.Header("X-B")), req: func() *http.Request { return newReq("192.0.2.7:1", "X-A: a", "X-B: b") },
			typed: "a b"},
		{name: "two headers with spaces, parts", key: keyfunc.Join(keyfunc.Header("X-A"), keyfunc.Header("X-B")),
			req: func() *http.Request { return newReq("192.0.2.7:1", "X-A: a 1", "X-B: b 2") }, parts: []string{"a 1", " b 2"}},
		{name: "ip, endpoint, header", key: keyfunc.Join(keyfunc.ClientIP(), keyfunc.Endpoint(), keyfunc.Header("X-A")), req: func() *http.Request {
			r := post()
			r.RemoteAddr, r.Header["X-A"] = "[2001:db8::9]:1", []string{"x y"}
			return r
		}, pattern: "POST /login", typed: "2001:db8::1 POST /login x y"},
		{name: "nested join", key: keyfunc.Join(keyfunc.Join(keyfunc.ClientIP(), keyfunc.Header("X-A")), keyfunc.Endpoint()), req: func() *http.Request {
			r := post()
			r.Header.Set("X-A", "x y")
			return r
		}, pattern: "POST /login", typed: "192.0.2.1 x y POST /login"},
		{name: "custom, as is", key: keyfunc.New("tenant", func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil }),
			req: func() *http.Request { return newReq("192.0.2.7:1", "X-Tenant: acme") }, typed: "acme"},
		{name: "custom with a parser", key: lower, req: func() *http.Request { return newReq("192.0.2.7:1", "X-Tenant: ACME") }, typed: "Acme"},
		{name: "custom with a parser, joined", key: keyfunc.Join(lower, keyfunc.Endpoint()), req: func() *http.Request {
			r := post()
			r.Header.Set("X-Tenant", "ACME")
			return r
		}, pattern: "POST /login", typed: "Acme POST /login"},
		{name: "custom under a built-in kind", key: keyfunc.New("ip", keyfunc.ClientIP().Func()), req: func() *http.Request { return newReq("[2001:db8::9]:1") },
			typed: "2001:db8::1"},
		{name: "custom user_endpoint", key: keyfunc.New("user_endpoint", keyfunc.Join(users, keyfunc.Endpoint()).Func()),
			req: func() *http.Request { return withUser(post(), "bob") }, pattern: "POST /login", typed: "bob POST /login"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.req()
			if tc.pattern != "" {
				r = routed(t, tc.pattern, r)
			}
			live, err := tc.key.Identity(r)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			if tc.parts != nil {
				got, err = tc.key.ParseParts(tc.parts)
			} else {
				got, err = tc.key.Parse(tc.typed)
			}
			if err != nil || got != live {
				t.Fatalf("Parse = %q, %v; the request's identity is %q", got, err, live)
			}
		})
	}
}

// TestParseRefusesWhatNoRequestGets: text that no request's identity
// could be read from is an error naming the form, never the text.
func TestParseRefusesWhatNoRequestGets(t *testing.T) {
	cases := []struct {
		name  string
		key   keyfunc.Key
		typed string
		parts []string
		form  string // in the error
	}{
		{name: "ip host name", key: keyfunc.ClientIP(), typed: "localhost", form: "an IPv4 or IPv6 address"},
		{name: "ip prefix", key: keyfunc.ClientIP(), typed: "10.0.0.0/8", form: "an IPv4 or IPv6 address"},
		{name: "empty header", key: keyfunc.Header("X-A"), typed: " \t", form: "the value of the X-A header"},
		{name: "empty user", key: users, typed: "", form: "a user id"},
		{name: "global someone", key: keyfunc.Global(), typed: "someone", form: `"global", or nothing`},
		{name: "endpoint, path only", key: keyfunc.Endpoint(), typed: "/login", form: "a method, a space and a route pattern"},
		{name: "endpoint, no slash", key: keyfunc.Endpoint(), typed: "GET login", form: "a method, a space and a route pattern"},
		{name: "endpoint, three fields", key: keyfunc.Endpoint(), typed: "GET /a /b", form: "a method"},
		{name: "endpoint, bad method", key: keyfunc.Endpoint(), typed: "G(T /x", form: "a method"},
		{name: "header endpoint, no endpoint", key: keyfunc.Join(keyfunc.Header("X-User"), keyfunc.Endpoint()), typed: "alice",
			form: `separated by spaces (the value of the X-User header; then a method, a space and a route pattern), such as "user-1 GET /users/{id}"; or a list of one identity per part`},
		{name: "header endpoint, bad endpoint", key: keyfunc.Join(keyfunc.Header("X-User"), keyfunc.Endpoint()), typed: "alice GET login", form: "X-User header; then a method"},
		{name: "two headers, ambiguous", key: keyfunc.Join(keyfunc.Header("X-A"), keyfunc.Header("X-B")), typed: "a b c", form: "a list of one identity per part"},
		{name: "ip endpoint, too many fields", key: keyfunc.Join(keyfunc.ClientIP(), keyfunc.Endpoint()), typed: "192.0.2.1 GET /x y", form: "an IPv4 or IPv6 address; then"},
		{name: "parts, one short", key: keyfunc.Join(users, keyfunc.Endpoint()), parts: []string{"alice"}, form: "a list of 2 identities, one per part"},
		{name: "parts, bad second", key: keyfunc.Join(users, keyfunc.Endpoint()), parts: []string{"alice", "alice"}, form: "part #2: malformed endpoint identity"},
		{name: "parts for a plain key", key: keyfunc.ClientIP(), parts: []string{"192.0.2.1", "x"}, form: "one identity"},
		{name: "zero key", key: keyfunc.Key{}, typed: "x", form: "zero Key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var id string
			var err error
			if tc.parts != nil {
				id, err = tc.key.ParseParts(tc.parts)
			} else {
				id, err = tc.key.Parse(tc.typed)
			}
			var fe *keyfunc.FormError
			if id != "" || !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.form) || !strings.HasPrefix(err.Error(), "keyfunc: ") {
				t.Fatalf("got %q, %v; want a FormError with %q", id, err, tc.form)
			}
			if len(tc.typed) > 3 && strings.Contains(err.Error(), tc.typed) {
				t.Fatalf("the error echoes the text: %v", err)
			}
		})
	}
}

func TestParseWithPanicsOnNil(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("ParseWith(nil) did not panic")
		}
	}()
	keyfunc.Global().ParseWith(nil)
}

// TestEndpointBeforeRouting: the endpoint key run before routing fails
// with ErrNotRouted, alone or joined, which is a no-key error but never a
// missing identity (no rule may skip the request), and names the fix.
func TestEndpointBeforeRouting(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/users/1", nil)
	r.Header.Set("X-User", "alice")
	for name, key := range map[string]keyfunc.Key{
		"endpoint":        keyfunc.Endpoint(),
		"header endpoint": keyfunc.Join(keyfunc.Header("X-User"), keyfunc.Endpoint()),
		"required":        keyfunc.Endpoint().Required(),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := key.Identity(r)
			if !errors.Is(err, keyfunc.ErrNotRouted) || !errors.Is(err, keyfunc.ErrNoKey) || errors.Is(err, keyfunc.ErrMissing) || key.Skips(err) {
				t.Fatalf("got %v; want ErrNotRouted and ErrNoKey, not ErrMissing", err)
			}
			for _, fix := range []string{"EndpointFromMux", "chikey.Endpoint", "after routing"} {
				if !strings.Contains(err.Error(), fix) {
					t.Errorf("%v: does not name %s", err, fix)
				}
			}
		})
	}
}

// FuzzParseJoined: a header's value joined with an endpoint, typed as
// the operator reads them (value, space, endpoint) or one per part, is
// read into the identity the request gets.
func FuzzParseJoined(f *testing.F) {
	for _, s := range []string{"alice", "Alice Smith", "a  b", "1:a,", "GET /x", "<unmatched>", "a\tb"} {
		f.Add(s)
	}
	key := keyfunc.Join(keyfunc.Header("X-User"), keyfunc.Endpoint())
	f.Fuzz(func(t *testing.T, value string) {
		r := httptest.NewRequest(http.MethodPost, "/login", nil)
		r.Header["X-User"] = []string{value}
		r.Pattern = "POST /login"
		live, err := key.Identity(r)
		if err != nil {
			return // no identity: nothing to find
		}
		typed, err := key.Parse(value + " POST /login")
		if err != nil || typed != live {
			t.Fatalf("Parse(%q) = %q, %v; the request's identity is %q", value+" POST /login", typed, err, live)
		}
		parts, err := key.ParseParts([]string{value, "POST /login"})
		if err != nil || parts != live {
			t.Fatalf("ParseParts(%q) = %q, %v; want %q", value, parts, err, live)
		}
	})
}
