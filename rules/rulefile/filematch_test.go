package rulefile_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/rulefile"
)

// matched returns the names of the rules set applies to r, or the error.
func matched(t *testing.T, set *rules.Set, r *http.Request) []string {
	t.Helper()
	var m rules.Matched
	if err := set.Resolve(r, &m); err != nil {
		t.Fatalf("%s %s: %v", r.Method, r.URL, err)
	}
	names := make([]string, len(m.Rules))
	for i, rule := range m.Rules {
		names[i] = rule.Name
	}
	return names
}

func mustParse(t *testing.T, src string, cfg rulefile.LoadConfig) *rules.Set {
	t.Helper()
	set, err := rulefile.Parse("test.yaml", []byte(src), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

type req struct {
	method, target string
	hdr            []string // name, value pairs
	user           string
}

func (q req) build() *http.Request {
	method := q.method
	if method == "" {
		method = http.MethodGet
	}
	r := httptest.NewRequest(method, q.target, nil)
	for i := 0; i+1 < len(q.hdr); i += 2 {
		r.Header.Add(q.hdr[i], q.hdr[i+1])
	}
	if q.user != "" {
		r = withUser(r, q.user)
	}
	return r
}

func TestPlansMatching(t *testing.T) {
	set, err := rulefile.LoadFile("../../testdata/rulefiles/valid/plans.yaml", testConfig())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		req  req
		want []string
	}{
		{"no_plan_only_rules_without_plans", req{target: "/", hdr: []string{"X-API-Key", "k"}}, []string{"per-ip"}},
		{"free", req{target: "/", hdr: []string{"X-API-Key", "k", "X-Plan", "free"}}, []string{"per-ip", "api-free"}},
		{"pro", req{target: "/", hdr: []string{"X-API-Key", "k", "X-Plan", "pro"}}, []string{"per-ip", "api-paid"}},
		{"enterprise", req{target: "/", hdr: []string{"X-API-Key", "k", "X-Plan", "enterprise"}}, []string{"per-ip", "api-paid"}},
		{"unknown_plan", req{target: "/", hdr: []string{"X-API-Key", "k", "X-Plan", "gold"}}, []string{"per-ip"}},
		{"plan_but_no_api_key", req{target: "/", hdr: []string{"X-Plan", "pro"}}, []string{"per-ip"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := matched(t, set, tc.req.build()); !slices.Equal(got, tc.want) {
				t.Fatalf("matched %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMatchMethodsHostsRoutes(t *testing.T) {
	mux := http.NewServeMux()
	for _, p := range []string{"/login", "/items/{id}", "/items/{id}/reviews", "/export"} {
		mux.HandleFunc(p, func(http.ResponseWriter, *http.Request) {})
	}
	cfg := testConfig()
	cfg.Endpoint = keyfunc.EndpointFromMux(mux)
	set := mustParse(t, `
rules:
  - name: login
    key: ip
    match: {methods: [post], routes: [/login]}
    limit: {rate: 5, per: 1m}
  - name: reads
    key: ip
    match: {methods: [GET], routes: ["/items/{id}", "/items/{id}/reviews"]}
    limit: {rate: 5, per: 1m}
  - name: api-host
    key: ip
    match: {host: [api.example.com, "*.tenants.example.com"]}
    limit: {rate: 5, per: 1m}
`, cfg)
	cases := []struct {
		name string
		req  req
		want []string
	}{
		{"post_login", req{method: "POST", target: "http://example.com/login"}, []string{"login"}},
		{"get_login_is_not_post", req{target: "http://example.com/login"}, []string{}},
		{"route_pattern_not_path", req{target: "http://example.com/items/42"}, []string{"reads"}},
		{"second_route", req{target: "http://example.com/items/7/reviews"}, []string{"reads"}},
		{"get_implies_head", req{method: "HEAD", target: "http://example.com/items/42"}, []string{"reads"}},
		{"unmatched_path", req{target: "http://example.com/nope"}, []string{}},
		{"host", req{target: "http://api.example.com/x"}, []string{"api-host"}},
		{"host_with_port_and_case", req{target: "http://API.Example.com:8443/x"}, []string{"api-host"}},
		{"host_wildcard", req{target: "http://acme.tenants.example.com/x"}, []string{"api-host"}},
		{"wildcard_not_apex", req{target: "http://tenants.example.com/x"}, []string{}},
		{"other_host", req{target: "http://evil-api.example.com/x"}, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := matched(t, set, tc.req.build()); !slices.Equal(got, tc.want) {
				t.Fatalf("matched %v, want %v", got, tc.want)
			}
		})
	}
}

// Without a way to find the route before routing, a rule restricted to
// routes applies (fails closed) rather than letting every request past.
func TestRouteUnknownFailsClosed(t *testing.T) {
	set := mustParse(t, "rules:\n  - {name: login, key: ip, match: {routes: [/login]}, limit: {rate: 5, per: 1m}}\n", rulefile.LoadConfig{})
	r := httptest.NewRequest("GET", "/anything", nil) // r.Pattern is empty: not routed yet
	if got := matched(t, set, r); !slices.Equal(got, []string{"login"}) {
		t.Fatalf("matched %v, want the rule to apply", got)
	}
	r.Pattern = "/other"
	if got := matched(t, set, r); len(got) != 0 {
		t.Fatalf("after routing to /other: matched %v", got)
	}
	r.Pattern = "/login"
	if got := matched(t, set, r); len(got) != 1 {
		t.Fatalf("after routing to /login: matched %v", got)
	}
}

// Rules keyed on an identity a request may lack (an API key, a header, a
// user) apply only to requests that carry it, unless key_required is set;
// one carried badly is a key error, never a skip.
func TestKeysAndPresence(t *testing.T) {
	set := mustParse(t, `
rules:
  - {name: per-ip, key: ip, limit: {rate: 5, per: 1m}}
  - {name: per-key, key: api_key, limit: {rate: 5, per: 1m}}
  - {name: per-tenant, key: "header:x-tenant", limit: {rate: 5, per: 1m}}
  - {name: per-user, key: user, limit: {rate: 5, per: 1m}}
  - {name: per-custom, key: tenant, limit: {rate: 5, per: 1m}, match: {methods: [PUT]}}
  - {name: all, key: global, limit: {rate: 5, per: 1m}}
`, testConfig())
	anon := req{target: "/"}
	if got := matched(t, set, anon.build()); !slices.Equal(got, []string{"per-ip", "all"}) {
		t.Fatalf("anonymous: %v", got)
	}
	full := req{target: "/", hdr: []string{"X-API-Key", "k1", "X-Tenant", "acme"}, user: "alice"}
	r := full.build()
	var m rules.Matched
	if err := set.Resolve(r, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, h := range m.Hits {
		keys = append(keys, h.Key)
	}
	want := []string{
		rules.BucketKey("per-ip", "ip", "192.0.2.1"),
		rules.BucketKey("per-key", "api_key", "k1"),
		rules.BucketKey("per-tenant", "header:X-Tenant", "acme"),
		rules.BucketKey("per-user", "user", "alice"),
		rules.BucketKey("all", "global", "global"),
	}
	if !slices.Equal(keys, want) {
		t.Fatalf("keys\n%q\nwant\n%q", keys, want)
	}
	twice := req{target: "/", hdr: []string{"X-API-Key", "k1", "X-API-Key", "k2"}}
	if err := set.Resolve(twice.build(), &m); !errors.Is(err, keyfunc.ErrNoKey) || !strings.Contains(err.Error(), `"per-key"`) {
		t.Fatalf("API key sent twice: err = %v", err)
	}
	// A registered key that reports a missing identity is skipped too.
	custom := httptest.NewRequest("PUT", "/t", nil)
	if got := matched(t, set, custom); !slices.Equal(got, []string{"per-ip", "all"}) {
		t.Fatalf("custom key without its header: %v", got)
	}
	// key_required: a request without the identity is a key error.
	required := mustParse(t, `
rules:
  - {name: per-ip, key: ip, limit: {rate: 5, per: 1m}}
  - {name: per-key, key: api_key, key_required: true, limit: {rate: 5, per: 1m}}
`, testConfig())
	if err := required.Resolve(anon.build(), &m); !errors.Is(err, keyfunc.ErrMissing) || !strings.Contains(err.Error(), `"per-key"`) {
		t.Fatalf("required API key missing: err = %v", err)
	}
	if got := matched(t, required, full.build()); !slices.Equal(got, []string{"per-ip", "per-key"}) {
		t.Fatalf("required API key present: %v", got)
	}
}

// A file that needs something the LoadConfig does not provide is refused
// at load, saying what to set.
func TestLoadConfigRequirements(t *testing.T) {
	cases := []struct {
		name string
		src  string
		cfg  rulefile.LoadConfig
		want string
	}{
		{"user_key", "rules:\n  - {name: u, key: user, limit: {rate: 1, per: 1s}}\n", rulefile.LoadConfig{}, `test.yaml:2: rule "u": key: user needs the signed-in user: set LoadConfig.User`},
		{"user_endpoint_key", "rules:\n  - {name: u, key: user_endpoint, limit: {rate: 1, per: 1s}}\n", rulefile.LoadConfig{}, "set LoadConfig.User"},
		{"plans", "rules:\n  - {name: p, key: ip, plans: [pro], limit: {rate: 1, per: 1s}}\n", rulefile.LoadConfig{}, `test.yaml:2: rule "p": plans: needs the request's plan: set LoadConfig.Plan`},
		{"bypass_users", "rules:\n  - {name: p, key: ip, limit: {rate: 1, per: 1s}}\nbypass:\n  - {name: ops, users: [alice], limit: {rate: 1, per: 1s}}\n", rulefile.LoadConfig{}, `test.yaml:4: bypass "ops": users: needs the signed-in user`},
		{"custom_key", "rules:\n  - {name: t, key: tenant, limit: {rate: 1, per: 1s}}\n", rulefile.LoadConfig{}, "registered in LoadConfig.Keys: none"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rulefile.Parse("test.yaml", []byte(tc.src), tc.cfg)
			if !errors.Is(err, rulefile.ErrInvalidFile) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
	valid := []byte("rules:\n  - {name: p, key: ip, limit: {rate: 1, per: 1s}}\n")
	for name, cfg := range map[string]rulefile.LoadConfig{
		"builtin_name":  {Keys: map[string]keyfunc.Key{"ip": keyfunc.Global()}},
		"header_name":   {Keys: map[string]keyfunc.Key{"header:x": keyfunc.Global()}},
		"upper_case":    {Keys: map[string]keyfunc.Key{"Tenant": keyfunc.Global()}},
		"zero_key":      {Keys: map[string]keyfunc.Key{"tenant": {}}},
		"ipv6_prefix":   {IPv6Prefix: 8},
		"api_key_space": {APIKeyHeader: "X API Key"},
	} {
		if _, err := rulefile.Parse("test.yaml", valid, cfg); err == nil || !strings.HasPrefix(err.Error(), "rulefile: LoadConfig.") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// A custom key's empty identity is no identity (keyfunc.Strict), never a
// bucket shared by everyone: the rule skips the request, or refuses it
// when the key is required.
func TestCustomKeyIsStrict(t *testing.T) {
	cfg := rulefile.LoadConfig{Keys: map[string]keyfunc.Key{
		"tenant": keyfunc.New("any", func(*http.Request) (string, error) { return "", nil }),
	}}
	set := mustParse(t, "rules:\n  - {name: t, key: tenant, limit: {rate: 1, per: 1s}}\n", cfg)
	var m rules.Matched
	if err := set.Resolve(httptest.NewRequest("GET", "/", nil), &m); err != nil || len(m.Hits) != 0 {
		t.Fatalf("err = %v, hits %+v; want the rule to skip the request", err, m.Hits)
	}
	set = mustParse(t, "rules:\n  - {name: t, key: tenant, key_required: true, limit: {rate: 1, per: 1s}}\n", cfg)
	if err := set.Resolve(httptest.NewRequest("GET", "/", nil), &m); !errors.Is(err, keyfunc.ErrMissing) {
		t.Fatalf("err = %v", err)
	}
}

// Disabled rules are checked, then left out; defaults apply to every rule.
func TestDefaultsAndEnabled(t *testing.T) {
	set := mustParse(t, `
defaults: {algorithm: fixed_window, on_fail: closed, expose: false, shadow: true}
rules:
  - {name: a, key: ip, limit: {rate: 5, per: 1m}}
  - {name: b, key: ip, limit: {rate: 5, per: 1m}, enabled: false}
  - {name: c, key: ip, limit: {rate: 5, per: 1m, burst: 9}, algorithm: token_bucket, on_fail: open, expose: true, shadow: false}
`, testConfig())
	got := describe(set)
	want := "rule a: key=ip limit=5/1m algorithm=fixed_window cost=1 max_cost=0 on_fail=closed shadow=true hidden=true match=false\n" +
		"rule c: key=ip limit=5/1m burst 9 algorithm=token_bucket cost=1 max_cost=0 on_fail=open shadow=false hidden=false match=false\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	_, err := rulefile.Parse("test.yaml", []byte("rules:\n  - {name: a, key: ip, limit: {rate: 5, per: 1m}}\n  - {name: b, key: nope, limit: {rate: 5, per: 1m}, enabled: false}\n"), testConfig())
	if err == nil || !strings.Contains(err.Error(), `rule "b": key: unknown key kind "nope"`) {
		t.Fatalf("a disabled rule is not checked: %v", err)
	}
}

// A file's rules key their buckets exactly as the same rules written in
// Go, so moving rules into a file keeps the clients' buckets.
func TestFileRulesShareBucketsWithGoRules(t *testing.T) {
	set := mustParse(t, "rules:\n  - {name: per-ip, key: ip, limit: {rate: 100, per: 1m}}\n", rulefile.LoadConfig{})
	goSet := rules.MustNew(rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: set.Rules()[0].Limit})
	r := httptest.NewRequest("GET", "/", nil)
	var a, b rules.Matched
	if err := set.Resolve(r, &a); err != nil {
		t.Fatal(err)
	}
	if err := goSet.Resolve(r, &b); err != nil {
		t.Fatal(err)
	}
	if a.Hits[0] != b.Hits[0] {
		t.Fatalf("file hit %+v, Go hit %+v", a.Hits[0], b.Hits[0])
	}
}
