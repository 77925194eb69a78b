package envoy

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/yamlkit"
	"github.com/sluicehq/sluice/rules"
)

// MaxMappingSize is the size of the largest mapping file accepted, 1 MiB.
const MaxMappingSize = 1 << 20

// Unmatched says how a descriptor is answered when no rate limit of its
// domain applies to it (see the package documentation).
type Unmatched uint8

const (
	// UnmatchedOK answers such a descriptor OK and counts nothing, as
	// envoyproxy/ratelimit does. The default.
	UnmatchedOK Unmatched = iota
	// UnmatchedOverLimit answers such a descriptor, and so the request,
	// OVER_LIMIT, consuming nothing: only what the mapping names passes.
	UnmatchedOverLimit
)

var unmatchedNames = [...]string{"ok", "over_limit"}

// String returns "ok" or "over_limit", as a mapping file writes it.
func (u Unmatched) String() string {
	if int(u) < len(unmatchedNames) {
		return unmatchedNames[u]
	}
	return "Unmatched(" + strconv.Itoa(int(u)) + ")"
}

// Mapping is the rate limits of one or more domains, read from mapping
// files (see the package documentation for the format) by [ParseMapping]
// or [LoadMapping]. It is immutable and safe for concurrent use.
type Mapping struct {
	domains map[string]*domain
}

// Domains returns the names of the mapping's domains, sorted.
func (m *Mapping) Domains() []string {
	names := make([]string, 0, len(m.domains))
	for n := range m.domains {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Rules returns the rules the mapping of domain defines, one per rate
// limit that is not unlimited, named as they appear in metrics, headers and
// response statuses; nil for a domain it does not define or one without
// limits. Their keys are not for HTTP requests: the service builds each
// descriptor's hit itself.
func (m *Mapping) Rules(domain string) *rules.Set {
	if d := m.domains[domain]; d != nil {
		return d.set
	}
	return nil
}

// domain is one document of a mapping file.
type domain struct {
	name      string
	file      string // where it was defined, for duplicate-domain errors
	line      int
	root      *level
	unmatched Unmatched
	set       *rules.Set // nil when the domain has no limits
	// override is the template of limits a descriptor overrides
	// (RateLimitDescriptor.limit) when it matches no rate limit: the
	// domain's defaults, named "<domain>.limit_override".
	override rules.Rule
}

// level is the descriptors at one depth under one parent.
type level struct {
	exact map[entry]*node  // key and value
	wild  []*node          // value with a '*', in file order
	any   map[string]*node // key only: any value
}

type entry struct{ key, value string }

// node is one descriptor of a mapping file.
type node struct {
	key, value string
	parts      []string // value split at '*', for a wildcard
	share      bool     // share_threshold: every value the wildcard matches shares one bucket
	limit      *limit   // nil: no rate_limit here
	next       *level   // nil: no nested descriptors
}

// limit is a descriptor's rate_limit.
type limit struct {
	name      string // the rule's name, also what replaces refers to
	unlimited bool
	replaces  []string
	rule      *rules.Rule // nil when unlimited
	unit      rlsv3.RateLimitResponse_RateLimit_Unit
	rpu       uint32
}

// unitDef is a unit of a rate limit.
type unitDef struct {
	name string
	unit rlsv3.RateLimitResponse_RateLimit_Unit
	d    time.Duration
}

// units maps a unit's name to the Envoy unit and its length. Months are
// 30 days and years 365, as envoyproxy/ratelimit counts them.
var units = []unitDef{
	{"second", rlsv3.RateLimitResponse_RateLimit_SECOND, time.Second},
	{"minute", rlsv3.RateLimitResponse_RateLimit_MINUTE, time.Minute},
	{"hour", rlsv3.RateLimitResponse_RateLimit_HOUR, time.Hour},
	{"day", rlsv3.RateLimitResponse_RateLimit_DAY, 24 * time.Hour},
	{"week", rlsv3.RateLimitResponse_RateLimit_WEEK, 7 * 24 * time.Hour},
	{"month", rlsv3.RateLimitResponse_RateLimit_MONTH, 30 * 24 * time.Hour},
	{"year", rlsv3.RateLimitResponse_RateLimit_YEAR, 365 * 24 * time.Hour},
}

// unitDuration returns the length of u, or 0 for an unknown unit.
func unitDuration(u rlsv3.RateLimitResponse_RateLimit_Unit) time.Duration {
	for _, x := range units {
		if x.unit == u {
			return x.d
		}
	}
	return 0
}

// match finds the rate limit that applies to a descriptor's entries, as
// envoyproxy/ratelimit does: level by level, an entry matches a descriptor
// of its key and value, else one whose value pattern matches, else one of
// its key alone; the limit is that of the descriptor the last entry
// matches. shared[i] is set (allocated on first use) to the pattern that
// stands for entry i's value when a share_threshold descriptor matched it.
func (d *domain) match(entries []entry) (lim *limit, shared []string) {
	lv := d.root
	for i, e := range entries {
		if lv == nil {
			return nil, nil
		}
		n, wild := lv.exact[e], false
		if n == nil {
			for _, w := range lv.wild {
				if w.key == e.key && wildcardMatch(w.parts, e.value) {
					n, wild = w, true
					break
				}
			}
		}
		if n == nil {
			n = lv.any[e.key]
		}
		if n == nil {
			return nil, nil
		}
		if wild && n.share {
			if shared == nil {
				shared = make([]string, len(entries))
			}
			shared[i] = n.value
		}
		if i == len(entries)-1 {
			return n.limit, shared
		}
		lv = n.next
	}
	return nil, nil
}

// wildcardMatch reports whether value matches a pattern split at its '*'s,
// each '*' standing for any run of bytes, possibly empty.
func wildcardMatch(parts []string, value string) bool {
	if len(parts) == 1 {
		return parts[0] == value
	}
	first, last := parts[0], parts[len(parts)-1]
	if len(value) < len(first)+len(last) || !strings.HasPrefix(value, first) || !strings.HasSuffix(value, last) {
		return false
	}
	rest := value[len(first) : len(value)-len(last)]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return true
}

// ParseMapping reads a mapping file's content (see the package
// documentation for the format): one YAML document per domain, several
// separated by "---". name appears in error messages, typically as the
// file's path.
//
// Every problem is found here, none per request: an error is a
// [*MappingError] wrapping [ErrInvalidMapping] and
// [sluice.ErrInvalidConfig] that names the file, the line, the domain and
// the field.
func ParseMapping(name string, data []byte) (*Mapping, error) {
	m := &Mapping{domains: make(map[string]*domain)}
	if err := m.add(name, data); err != nil {
		return nil, err
	}
	return m, nil
}

// LoadMapping reads the mapping files at paths and combines their domains
// into one Mapping. A domain defined twice, in one file or two, is an
// error, as is a file that cannot be read or parsed (see [ParseMapping]).
func LoadMapping(paths ...string) (*Mapping, error) {
	if len(paths) == 0 {
		return nil, &MappingError{Err: errors.New("no mapping file given")}
	}
	m := &Mapping{domains: make(map[string]*domain)}
	for _, p := range paths {
		data, err := readFile(p)
		if err != nil {
			return nil, err
		}
		if err := m.add(p, data); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// add parses one file into m.
func (m *Mapping) add(name string, data []byte) error {
	data, err := yamlkit.Input(data, MaxMappingSize)
	if err != nil {
		return &MappingError{File: name, Err: err}
	}
	d := newDecoder(name) // one node budget for the file's documents
	docs, found := yamlkit.NewDocuments(data), false
	for {
		doc, err := docs.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return syntaxError(name, err)
		}
		if len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
			continue // an empty document, such as after a trailing "---"
		}
		found = true
		dom, err := d.document(doc.Content[0])
		if err != nil {
			return err
		}
		if prev := m.domains[dom.name]; prev != nil {
			return &MappingError{File: name, Line: dom.line, Domain: dom.name, Field: "domain",
				Err: fmt.Errorf("defined twice (first at %s:%d)", prev.file, prev.line)}
		}
		m.domains[dom.name] = dom
	}
	if !found {
		return &MappingError{File: name, Err: errors.New("empty file: no domain")}
	}
	return nil
}

// syntaxError returns the *MappingError of a file that is not YAML.
func syntaxError(file string, err error) error {
	if se, ok := errors.AsType[*yamlkit.SyntaxError](err); ok {
		return &MappingError{File: file, Line: se.Line, Err: se.Err}
	}
	return &MappingError{File: file, Err: err}
}

// readFile reads at most MaxMappingSize bytes of path.
func readFile(path string) ([]byte, error) {
	data, err := yamlkit.ReadFile(path, MaxMappingSize)
	if err != nil {
		return nil, &MappingError{File: path, Err: err}
	}
	return data, nil
}

// newRule builds a rate limit's rule. Its key is never called: the service
// builds each descriptor's hit itself.
func newRule(name string, l sluice.Limit, alg sluice.Algorithm, onFail rules.OnFail, shadow, hidden bool) rules.Rule {
	return rules.Rule{Name: name, Key: descriptorKey, Limit: l, Algorithm: alg, OnFail: onFail, Shadow: shadow, Hidden: hidden}
}
