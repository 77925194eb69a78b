package rulefile

import (
	"net/http"
	"strings"
)

// matcher is the compiled match and plans of a file rule:
// the conditions a request must meet for the rule to apply. Empty
// conditions always hold.
type matcher struct {
	methods map[string]bool // GET implies HEAD
	hosts   []string        // lower case; "*.example.com" matches subdomains
	routes  map[string]bool
	plans   map[string]bool
	env     *env
}

// fn returns the matcher as a Rule.Match, nil when it has no conditions.
func (m *matcher) fn() func(*http.Request) bool {
	if len(m.methods) == 0 && len(m.hosts) == 0 && len(m.routes) == 0 && len(m.plans) == 0 {
		return nil
	}
	return m.match
}

// match checks the cheap conditions first and the route, a lookup, last.
func (m *matcher) match(r *http.Request) bool {
	if len(m.methods) > 0 && !m.methods[r.Method] {
		return false
	}
	if len(m.hosts) > 0 && !matchHost(m.hosts, r.Host) {
		return false
	}
	if len(m.plans) > 0 && !m.plans[m.env.cfg.Plan(r)] {
		return false
	}
	if len(m.routes) > 0 {
		route, known := m.env.route(r)
		// Fail closed: a rule whose route cannot be told applies.
		return !known || m.routes[route]
	}
	return true
}

// matchHost reports whether host (a Host header, perhaps with a port)
// matches one of patterns.
func matchHost(patterns []string, host string) bool {
	if i := strings.LastIndexByte(host, ':'); i > strings.LastIndexByte(host, ']') {
		host = host[:i]
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, p := range patterns {
		if suffix, ok := strings.CutPrefix(p, "*"); ok {
			if len(host) > len(suffix) && strings.HasSuffix(host, suffix) {
				return true
			}
		} else if host == p {
			return true
		}
	}
	return false
}
