package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/sluicehq/sluice/decide"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	chimw "github.com/go-chi/chi/v5/middleware"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/keyfunc/chikey"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/admin"
	"github.com/sluicehq/sluice/rules/rulefile"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

type userCtx struct{}

// userOf reads the user authenticate put in the context.
func userOf(ctx context.Context) (string, bool) {
	u, ok := ctx.Value(userCtx{}).(string)
	return u, ok && u != ""
}

// authenticate stands for an application's authentication: the user is
// the X-Auth header.
func authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := r.Header.Get("X-Auth"); u != "" {
			r = r.WithContext(context.WithValue(r.Context(), userCtx{}, u))
		}
		next.ServeHTTP(w, r)
	})
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

var ok = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})

// onMux serves the limited handler on one ServeMux pattern, the limiter
// after routing.
func onMux(pattern string) func(limit func(http.Handler) http.Handler) http.Handler {
	return func(limit func(http.Handler) http.Handler) http.Handler {
		mux := http.NewServeMux()
		mux.Handle(pattern, limit(ok))
		return authenticate(mux)
	}
}

// around serves the limiter around the whole application.
func around(limit func(http.Handler) http.Handler) http.Handler { return authenticate(limit(ok)) }

// tenantKey is a key of your own that reads the X-Tenant header lower-cased:
// its identities need a parser.
var tenantKey = keyfunc.New("tenant", func(r *http.Request) (string, error) {
	t := strings.ToLower(r.Header.Get("X-Tenant"))
	if t == "" {
		return "", keyfunc.ErrMissing
	}
	return t, nil
}).ParseWith(func(typed string) (string, error) { return strings.ToLower(typed), nil })

// fromFile returns the rule named rule, of 1 a minute keyed by kind, read
// from a rule file.
func fromFile(t *testing.T, rule, kind string, cfg rulefile.LoadConfig) *rules.Set {
	t.Helper()
	set, err := rulefile.Parse("rules.yaml", []byte("version: 1\nrules:\n  - name: "+rule+"\n    key: "+kind+"\n    limit: {rate: 1, per: 1m}\n"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// kindCase is one key kind: a request its rule limits, the server that
// limits it, and the identity an operator knows the request by.
type kindCase struct {
	name     string
	key      keyfunc.Key
	set      func(t *testing.T, rule string) *rules.Set // instead of key, if set
	serve    func(limit func(http.Handler) http.Handler) http.Handler
	method   string
	path     string
	header   []string // "Name: value" lines
	identity string   // a JSON value
}

func kindCases() []kindCase {
	ip48 := must(keyfunc.IP(keyfunc.IPConfig{
		Resolver:   must(keyfunc.TrustedHeader("X-Real-IP", must(keyfunc.ParsePrefixes("127.0.0.1", "::1")))),
		IPv6Prefix: 48,
	}))
	user := keyfunc.User(userOf)
	return []kindCase{
		{name: "ip", key: keyfunc.ClientIP(), serve: around, identity: `"127.0.0.1"`},
		{name: "ip mapped", key: keyfunc.ClientIP(), serve: around, identity: `"::ffff:127.0.0.1"`},
		{name: "ip grouped by the key's /48", key: ip48, serve: around, header: []string{"X-Real-IP: 2001:db8:1:2::7"}, identity: `"2001:db8:1:ffff::1"`},
		{name: "user", key: user, serve: around, header: []string{"X-Auth: alice"}, identity: `"alice"`},
		{name: "api key", key: keyfunc.APIKey("X-API-Key"), serve: around, header: []string{"X-API-Key: key-1"}, identity: `" key-1 "`},
		{name: "header", key: keyfunc.Header("X-Tenant"), serve: around, header: []string{"X-Tenant: Acme Corp"}, identity: `"Acme Corp"`},
		{name: "endpoint", key: keyfunc.Endpoint(), serve: onMux("POST /login"), method: "POST", path: "/login", identity: `"POST /login"`},
		{name: "endpoint lower-case method", key: keyfunc.Endpoint(), serve: onMux("POST /login"), method: "POST", path: "/login", identity: `"post  /login"`},
		{name: "endpoint from mux", key: keyfunc.EndpointFromMux(muxWith("GET /users/{id}")), serve: around, path: "/users/7", identity: `"GET /users/{id}"`},
		{name: "endpoint unmatched", key: keyfunc.EndpointFromMux(muxWith("GET /users/{id}")), serve: around, path: "/nowhere", identity: `"GET <unmatched>"`},
		{name: "user endpoint", key: keyfunc.Join(user, keyfunc.Endpoint()), serve: onMux("POST /login"), method: "POST", path: "/login",
			header: []string{"X-Auth: alice"}, identity: `"alice POST /login"`},
		{name: "user with a space, endpoint", key: keyfunc.Join(user, keyfunc.Endpoint()), serve: onMux("POST /login"), method: "POST", path: "/login",
			header: []string{"X-Auth: Alice Smith"}, identity: `"Alice Smith POST /login"`},
		{name: "header endpoint", key: keyfunc.Join(keyfunc.Header("X-User"), keyfunc.Endpoint()), serve: onMux("POST /login"), method: "POST", path: "/login",
			header: []string{"X-User: alice"}, identity: `"alice POST /login"`},
		{name: "header endpoint as a list", key: keyfunc.Join(keyfunc.Header("X-User"), keyfunc.Endpoint()), serve: onMux("POST /login"), method: "POST", path: "/login",
			header: []string{"X-User: alice"}, identity: `["alice", "POST /login"]`},
		{name: "ip endpoint", key: keyfunc.Join(keyfunc.ClientIP(), keyfunc.Endpoint()), serve: onMux("GET /items/{id}"), path: "/items/3", identity: `"127.0.0.1 GET /items/{id}"`},
		{name: "two headers", key: keyfunc.Join(keyfunc.Header("X-Tenant"), keyfunc.Header("X-User")), serve: around,
			header: []string{"X-Tenant: acme", "X-User: alice"}, identity: `"acme alice"`},
		{name: "two headers with spaces, as a list", key: keyfunc.Join(keyfunc.Header("X-Tenant"), keyfunc.Header("X-User")), serve: around,
			header: []string{"X-Tenant: Acme Corp", "X-User: alice"}, identity: `["Acme Corp", "alice"]`},
		{name: "global", key: keyfunc.Global(), serve: around, identity: `"global"`},
		{name: "global, no identity", key: keyfunc.Global(), serve: around, identity: `""`},
		{name: "custom as its function returns it", key: keyfunc.New("tenant", func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil }),
			serve: around, header: []string{"X-Tenant: acme"}, identity: `"acme"`},
		{name: "custom with a parser", key: tenantKey, serve: around, header: []string{"X-Tenant: ACME"}, identity: `"Acme"`},
		{name: "custom with a parser, joined", key: keyfunc.Join(tenantKey, keyfunc.Endpoint()), serve: onMux("GET /items"), path: "/items",
			header: []string{"X-Tenant: ACME"}, identity: `"Acme GET /items"`},
		{name: "custom ip key from a rule file", set: func(t *testing.T, rule string) *rules.Set {
			return fromFile(t, rule, "client", rulefile.LoadConfig{Keys: map[string]keyfunc.Key{"client": chikey.ClientIP()}})
		},
			serve: func(limit func(http.Handler) http.Handler) http.Handler {
				r := chi.NewRouter()
				r.Use(chimw.ClientIPFromRemoteAddr, limit)
				r.Get("/", ok)
				return r
			}, identity: `"::ffff:127.0.0.1"`},
		{name: "chi endpoint in r.Use", key: chikey.Endpoint(nil), serve: func(limit func(http.Handler) http.Handler) http.Handler {
			r := chi.NewRouter()
			r.Use(limit)
			r.Get("/items/{id}", ok)
			return r
		}, path: "/items/9", identity: `"GET /items/{id}"`},
		{name: "user endpoint from a rule file", set: func(t *testing.T, rule string) *rules.Set {
			return fromFile(t, rule, "user_endpoint", rulefile.LoadConfig{User: userOf})
		}, serve: onMux("DELETE /items/{id}"), method: "DELETE", path: "/items/1", header: []string{"X-Auth: bob"}, identity: `"bob DELETE /items/{id}"`},
	}
}

func muxWith(pattern string) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle(pattern, ok)
	return mux
}

// TestResetByEveryKeyKind: for every kind of key, a request its rule
// refuses is admitted again once the operator resets the identity as they
// know it, through the admin handler over HTTP.
func TestResetByEveryKeyKind(t *testing.T) {
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1})
	t.Cleanup(func() { store.Close(context.Background()) })
	testResetByEveryKeyKind(t, store)
}

// testResetByEveryKeyKind runs the cases of kindCases on store, each
// under a rule of its own.
func testResetByEveryKeyKind(t *testing.T, store sluice.Resetter) {
	for i, tc := range kindCases() {
		t.Run(tc.name, func(t *testing.T) {
			rule := fmt.Sprintf("r%d", i)
			var set *rules.Set
			if tc.set != nil {
				set = tc.set(t, rule)
			} else {
				set = rules.MustNew(rules.Rule{Name: rule, Key: tc.key, Limit: sluice.PerMinute(1)})
			}
			api := httptest.NewServer(tc.serve(middleware.Limit(store, set, decide.WithLogger(discard))))
			t.Cleanup(api.Close)
			ops := httptest.NewServer(admin.MustNew(store, set, admin.WithLogger(discard)))
			t.Cleanup(ops.Close)

			if got := send(t, api, tc); got != http.StatusOK {
				t.Fatalf("first request: %d, want 200", got)
			}
			if got := send(t, api, tc); got != http.StatusTooManyRequests {
				t.Fatalf("second request at 1/min: %d, want 429", got)
			}
			status, body := post(t, ops, "/reset", `{"rule":"`+rule+`","identity":`+tc.identity+`}`)
			if status != http.StatusOK {
				t.Fatalf("reset by %s: %d %s", tc.identity, status, body)
			}
			if got := send(t, api, tc); got != http.StatusOK {
				t.Fatalf("after the reset by %s (answered %s): %d, want 200: the reset missed the request's bucket", tc.identity, body, got)
			}
		})
	}
}

// send sends tc's request and returns the status.
func send(t *testing.T, srv *httptest.Server, tc kindCase) int {
	t.Helper()
	method, path := tc.method, tc.path
	if method == "" {
		method = http.MethodGet
	}
	if path == "" {
		path = "/"
	}
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range tc.header {
		name, value, _ := strings.Cut(h, ":")
		req.Header.Add(name, strings.TrimSpace(value))
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// post sends body to the handler at srv and returns the status and body.
func post(t *testing.T, srv *httptest.Server, path, body string) (int, string) {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// TestMalformedIdentityNamesTheForm: an identity a rule's key cannot read
// is refused with 400 before any store call, and the problem says what
// form the key needs, never echoing the identity.
func TestMalformedIdentityNamesTheForm(t *testing.T) {
	user := keyfunc.User(userOf)
	for _, tc := range []struct {
		name     string
		key      keyfunc.Key
		identity string // a JSON value
		detail   []string
	}{
		{"ip", keyfunc.ClientIP(), `"localhost"`, []string{"keys on ip", "an IPv4 or IPv6 address"}},
		{"endpoint without a pattern", keyfunc.Endpoint(), `"POST"`, []string{"a method, a space and a route pattern", `"GET /users/{id}"`}},
		{"endpoint without a method", keyfunc.Endpoint(), `"/login"`, []string{"a method, a space and a route pattern"}},
		{"global", keyfunc.Global(), `"someone"`, []string{`"global", or nothing`}},
		{"header endpoint, as is", keyfunc.Join(keyfunc.Header("X-User"), keyfunc.Endpoint()), `"alice"`,
			[]string{"keys on header:X-User_endpoint", "separated by spaces", "the value of the X-User header; then a method, a space and a route pattern", `"user-1 GET /users/{id}"`, "a list of one identity per part"}},
		{"user endpoint, no endpoint", keyfunc.Join(user, keyfunc.Endpoint()), `"alice /login"`, []string{"a user id; then a method"}},
		{"two headers, ambiguous", keyfunc.Join(keyfunc.Header("X-Tenant"), keyfunc.Header("X-User")), `"Acme Corp alice"`,
			[]string{"one identity per part"}},
		{"a list one part short", keyfunc.Join(user, keyfunc.Endpoint()), `["alice"]`, []string{"a list of 2 identities, one per part"}},
		{"a list with a bad part", keyfunc.Join(user, keyfunc.Endpoint()), `["alice", "/login"]`, []string{"part #2 of the list (endpoint)", "a method, a space and a route pattern"}},
		{"a list for a key of one part", keyfunc.ClientIP(), `["127.0.0.1", "x"]`, []string{"one identity"}},
		{"empty list", keyfunc.Join(user, keyfunc.Endpoint()), `[]`, []string{"a list of 2 identities, one per part"}},
		{"empty user", user, `""`, []string{"a user id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memstore.New(memstore.Config{SweepInterval: -1})
			t.Cleanup(func() { mem.Close(context.Background()) })
			store := &countingStore{Resetter: mem}
			ops := httptest.NewServer(admin.MustNew(store, rules.MustNew(rules.Rule{Name: "r", Key: tc.key, Limit: sluice.PerMinute(1)})))
			t.Cleanup(ops.Close)
			for _, path := range []string{"/inspect", "/reset"} {
				status, body := post(t, ops, path, `{"rule":"r","identity":`+tc.identity+`}`)
				var p problemBody
				if err := json.Unmarshal([]byte(body), &p); err != nil || status != http.StatusBadRequest {
					t.Fatalf("%s %s: %d %s, want a 400 problem", path, tc.identity, status, body)
				}
				for _, want := range tc.detail {
					if !strings.Contains(p.Detail, want) {
						t.Errorf("%s %s: detail %q lacks %q", path, tc.identity, p.Detail, want)
					}
				}
			}
			if n := store.takes.Load() + store.resets.Load(); n != 0 {
				t.Fatalf("a malformed identity reached the store %d times", n)
			}
		})
	}
}

// TestOneHandlerForSeveralLimiters: the chi pattern of a limiter for every
// route and one for the login route, both on one store, is covered by one
// handler given both rule sets.
func TestOneHandlerForSeveralLimiters(t *testing.T) {
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1})
	t.Cleanup(func() { store.Close(context.Background()) })
	perKey := rules.MustNew(rules.Rule{Name: "per-api-key", Key: keyfunc.APIKey("X-API-Key"), Limit: sluice.PerMinute(2)})
	login := rules.MustNew(
		rules.Rule{Name: "login-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(1)},
		rules.Rule{Name: "login-user", Key: keyfunc.Header("X-User"), Limit: sluice.PerMinute(1)})
	r := chi.NewRouter()
	r.Use(middleware.Limit(store, perKey))
	r.With(middleware.Limit(store, login)).Post("/login", ok)
	r.Get("/items", ok)
	api := httptest.NewServer(r)
	t.Cleanup(api.Close)
	h, err := admin.New(store, perKey, admin.WithRules(login, perKey), admin.WithLogger(discard))
	if err != nil {
		t.Fatal(err)
	}
	ops := httptest.NewServer(h)
	t.Cleanup(ops.Close)

	loginReq := kindCase{method: "POST", path: "/login", header: []string{"X-User: alice"}}
	itemsReq := kindCase{path: "/items", header: []string{"X-API-Key: key-1"}}
	if a, b := send(t, api, loginReq), send(t, api, loginReq); a != 200 || b != 429 {
		t.Fatalf("logins: %d %d, want 200 429", a, b)
	}
	send(t, api, itemsReq)
	if a, b := send(t, api, itemsReq), send(t, api, itemsReq); a != 200 || b != 429 {
		t.Fatalf("items: %d %d, want 200 429", a, b)
	}

	resp, err := ops.Client().Get(ops.URL + "/rules")
	if err != nil {
		t.Fatal(err)
	}
	var listed struct{ Rules []admin.RuleInfo }
	err = json.NewDecoder(resp.Body).Decode(&listed)
	resp.Body.Close()
	if err != nil || len(listed.Rules) != 3 {
		t.Fatalf("/rules of both limiters, each rule once: %+v, %v", listed.Rules, err)
	}
	for _, q := range []string{`{"rule":"login-ip","identity":"127.0.0.1"}`, `{"rule":"login-user","identity":"alice"}`, `{"kind":"api_key","identity":"key-1"}`} {
		if status, body := post(t, ops, "/reset", q); status != http.StatusOK || strings.Count(body, `"rule"`) != 1 {
			t.Fatalf("reset %s: %d %s, want one bucket", q, status, body)
		}
	}
	if a, b := send(t, api, loginReq), send(t, api, itemsReq); a != 200 || b != 200 {
		t.Fatalf("after the resets: login %d, items %d; want 200 200", a, b)
	}
}

// TestIPIdentitiesGroupAsTheirKey: an ip identity is grouped by the
// prefix of the rule's key; the deprecated WithIPv6Prefix still replaces
// that grouping.
func TestIPIdentitiesGroupAsTheirKey(t *testing.T) {
	ip48 := must(keyfunc.IP(keyfunc.IPConfig{IPv6Prefix: 48}))
	for _, tc := range []struct {
		name string
		key  keyfunc.Key
		opts []admin.Option
		want string
	}{
		{"/64 by default", keyfunc.ClientIP(), nil, "2001:db8:1:203::"},
		{"the key's /48", ip48, nil, "2001:db8:1::"},
		{"WithIPv6Prefix", keyfunc.ClientIP(), []admin.Option{admin.WithIPv6Prefix(56)}, "2001:db8:1:200::"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memstore.New(memstore.Config{SweepInterval: -1})
			t.Cleanup(func() { mem.Close(context.Background()) })
			ops := httptest.NewServer(admin.MustNew(mem, rules.MustNew(rules.Rule{Name: "r", Key: tc.key, Limit: sluice.PerMinute(1)}), tc.opts...))
			t.Cleanup(ops.Close)
			status, body := post(t, ops, "/inspect", `{"rule":"r","identity":"2001:db8:1:203::7"}`)
			var b bucketsBody
			if err := json.Unmarshal([]byte(body), &b); err != nil || status != http.StatusOK || len(b.Buckets) != 1 || b.Buckets[0].Identity != tc.want {
				t.Fatalf("%d %s; want the identity %s", status, body, tc.want)
			}
		})
	}
}

// must returns v, or panics if err is not nil: for configuration fixed in
// a test.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
