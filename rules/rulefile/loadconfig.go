package rulefile

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/internal/ident"
	"github.com/sluicehq/sluice/keyfunc"
)

// DefaultAPIKeyHeader is the header api_key keys and bypass api_keys read
// when [LoadConfig.APIKeyHeader] is empty.
const DefaultAPIKeyHeader = "X-API-Key"

// LoadConfig connects a rule file to the application: where the client
// address, API keys, users, plans and route patterns come from, and the
// custom key functions a file may name. The file says what to limit; this
// says how to find it in a request.
//
// The zero value serves files whose rules key on ip (the TCP peer, IPv6
// grouped by /64), api_key (the X-API-Key header), header:NAME, global, and
// endpoint after routing. A file that needs something not configured (a
// user key, plans, a custom key) is refused at load with an error saying
// which field to set. A LoadConfig is read, never modified.
type LoadConfig struct {
	// ClientIP finds the client address for ip keys and bypass cidrs. nil
	// means [keyfunc.RemoteAddr], the TCP peer. Behind proxies use
	// [keyfunc.XFF] or [keyfunc.TrustedHeader] with the proxies' ranges.
	ClientIP keyfunc.IPResolver
	// IPv6Prefix groups IPv6 clients for ip keys (see [keyfunc.IPConfig]).
	// 0 means 64.
	IPv6Prefix int
	// APIKeyHeader names the header api_key keys and bypass api_keys
	// read. "" means [DefaultAPIKeyHeader].
	APIKeyHeader string
	// User finds the signed-in user in the request context, for user and
	// user_endpoint keys and bypass users (see [keyfunc.User]). nil: files
	// using them are refused.
	User func(context.Context) (id string, ok bool)
	// Plan returns the plan (tier) of a request, such as "free" or "pro",
	// or "" for none; rules listing plans apply only to requests whose plan
	// is listed. It typically reads what authentication stored in the
	// request context. nil: files using plans are refused.
	Plan func(*http.Request) string
	// Endpoint returns a request's endpoint key in the format of
	// [keyfunc.Endpoint] ("GET /users/{id}"), for endpoint and
	// user_endpoint keys and for match.routes. The zero Key means
	// [keyfunc.Endpoint], which reads r.Pattern and so works only after
	// routing (chi's r.With, a handler wrapped on its own). Where the
	// limiter runs before routing, as with chi's r.Use or in front of an
	// http.ServeMux, pass chikey.Endpoint(router) or
	// [keyfunc.EndpointFromMux](mux).
	Endpoint keyfunc.Key
	// Keys registers custom keys under names a rule's key field may use.
	// A name is lower-case letters, digits, '_' and '-', and is not a
	// built-in kind; it is the kind of the rules' buckets. Each key's
	// function is wrapped with [keyfunc.Strict]; a key that is
	// [keyfunc.Key.Required] stays so.
	Keys map[string]keyfunc.Key
}

// builtinKinds are the key kinds a rule file knows without registration;
// header:NAME is the one with a parameter.
var builtinKinds = []string{"ip", "user", "api_key", "user_endpoint", "endpoint", "global", "header:NAME"}

// env is a LoadConfig resolved into the key functions a file's rules use.
type env struct {
	cfg          LoadConfig
	ip           keyfunc.Key
	ipv6Prefix   int    // cfg.IPv6Prefix, or keyfunc.DefaultIPv6Prefix
	apiHeader    string // canonical
	apiKey       keyfunc.Key
	user         keyfunc.Key // zero without cfg.User
	endpoint     keyfunc.Key
	userEndpoint keyfunc.Key // zero without cfg.User
	custom       map[string]keyfunc.Key
}

func (c LoadConfig) env() (*env, error) {
	e := &env{cfg: c}
	apiHeader := c.APIKeyHeader
	if apiHeader == "" {
		apiHeader = DefaultAPIKeyHeader
	}
	var err error
	if e.ip, err = keyfunc.IP(keyfunc.IPConfig{Resolver: c.ClientIP, IPv6Prefix: c.IPv6Prefix}); err != nil {
		return nil, fmt.Errorf("rulefile: LoadConfig.IPv6Prefix: %w", err)
	}
	e.ipv6Prefix = cmp.Or(c.IPv6Prefix, keyfunc.DefaultIPv6Prefix)
	if !ident.IsToken(apiHeader) {
		return nil, fmt.Errorf("rulefile: LoadConfig.APIKeyHeader: %q is not a valid header name", apiHeader)
	}
	e.apiKey = keyfunc.APIKey(apiHeader)
	e.apiHeader = http.CanonicalHeaderKey(apiHeader)
	e.endpoint = keyfunc.Endpoint()
	if !c.Endpoint.IsZero() {
		e.endpoint = keyfunc.New("endpoint", c.Endpoint.Func())
	}
	if c.User != nil {
		e.user = keyfunc.User(c.User)
		e.userEndpoint = keyfunc.Join(e.user, e.endpoint)
	}
	e.custom = make(map[string]keyfunc.Key, len(c.Keys))
	for name, k := range c.Keys {
		if err := checkCustomName(name); err != nil {
			return nil, fmt.Errorf("rulefile: LoadConfig.Keys: %w", err)
		}
		if k.IsZero() {
			return nil, fmt.Errorf("rulefile: LoadConfig.Keys: %q: the zero Key", name)
		}
		// Renamed, the key keeps the way an operator names its
		// identities (rules/admin).
		custom := keyfunc.New(name, keyfunc.Strict(k.Func())).ParseWith(k.Parse)
		if k.IsRequired() {
			custom = custom.Required()
		}
		e.custom[name] = custom
	}
	return e, nil
}

func checkCustomName(name string) error {
	if name == "" || strings.HasPrefix(name, "header:") || slices.Contains(builtinKinds, name) {
		return fmt.Errorf("%q: empty, or a built-in key kind", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("%q: use lower-case letters, digits, '_' and '-'", name)
		}
	}
	return nil
}

// customNames lists the registered key names, sorted, for error messages.
func (e *env) customNames() string {
	if len(e.custom) == 0 {
		return "none"
	}
	names := make([]string, 0, len(e.custom))
	for n := range e.custom {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// route returns the route pattern of r (the endpoint key without its
// method), "" for a request no route matches, and known false when the
// endpoint function cannot tell.
func (e *env) route(r *http.Request) (pattern string, known bool) {
	k, err := e.endpoint.Identity(r)
	if err != nil {
		return "", false
	}
	_, rest, ok := strings.Cut(k, " ")
	if !ok {
		return "", false
	}
	if rest == keyfunc.Unmatched {
		return "", true
	}
	return rest, true
}
