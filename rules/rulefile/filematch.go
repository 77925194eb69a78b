package rulefile

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/internal/ascii"
	"github.com/sluicehq/sluice/internal/yamlkit"
	"go.yaml.in/yaml/v3"
)

var matchFields = []string{"methods", "routes", "host"}

// match reads a rule's match and plans fields into m.
func (d *decoder) match(match, plans *yaml.Node, m *matcher) error {
	if plans != nil {
		if d.env.cfg.Plan == nil {
			return d.Failf(yamlkit.Deref(plans), "plans", "needs the request's plan: set LoadConfig.Plan")
		}
		list, err := d.Strings(plans, "plans", false, checkPlan)
		if err != nil {
			return err
		}
		m.plans = set(list)
	}
	if match == nil {
		return nil
	}
	f, err := d.Mapping(match, "match", matchFields...)
	if err != nil {
		return err
	}
	if len(f) == 0 {
		return d.Failf(yamlkit.Deref(match), "match", "empty: leave it out to match every request")
	}
	if n, ok := f["methods"]; ok {
		list, err := d.Strings(n, "match.methods", false, checkMethod)
		if err != nil {
			return err
		}
		m.methods = set(list)
		if m.methods[http.MethodGet] {
			m.methods[http.MethodHead] = true // as routers serve HEAD with GET
		}
	}
	if n, ok := f["routes"]; ok {
		list, err := d.Strings(n, "match.routes", false, checkRoute)
		if err != nil {
			return err
		}
		m.routes = set(list)
	}
	if n, ok := f["host"]; ok {
		if m.hosts, err = d.Strings(n, "match.host", true, checkHost); err != nil {
			return err
		}
	}
	return nil
}

func set(list []string) map[string]bool {
	m := make(map[string]bool, len(list))
	for _, s := range list {
		m[s] = true
	}
	return m
}

func checkPlan(s string) (string, error) {
	if s == "" || !ascii.Printable(s) {
		return "", errors.New("a plan name is non-empty printable ASCII")
	}
	return s, nil
}

// checkMethod accepts an HTTP method (an RFC 9110 token), in upper case.
func checkMethod(s string) (string, error) {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r > 0x7e || !isTokenChar(byte(r)) }) {
		return "", fmt.Errorf("%s is not an HTTP method", yamlkit.Quote(s))
	}
	return strings.ToUpper(s), nil
}

func isTokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// checkRoute accepts a route pattern as the endpoint key spells it:
// "/users/{id}", or "example.com/users/{id}" for a host-specific ServeMux
// pattern.
func checkRoute(s string) (string, error) {
	switch {
	case strings.ContainsAny(s, " \t"):
		return "", fmt.Errorf("%s: a route pattern has no spaces (methods go in match.methods)", yamlkit.Quote(s))
	case !strings.Contains(s, "/") || !ascii.Printable(s):
		return "", fmt.Errorf("%s is not a route pattern such as /users/{id}", yamlkit.Quote(s))
	}
	return s, nil
}

// checkHost accepts a host name, in lower case, or "*." and a domain for
// its subdomains.
func checkHost(s string) (string, error) {
	h := strings.ToLower(strings.TrimSuffix(s, "."))
	rest := strings.TrimPrefix(h, "*.")
	if rest == "" || strings.ContainsAny(rest, "*/:@ \t") || !ascii.Printable(rest) {
		return "", fmt.Errorf("%s is not a host name (no port; *.example.com for subdomains)", yamlkit.Quote(s))
	}
	if rest != h {
		return "*." + rest, nil
	}
	return h, nil
}
