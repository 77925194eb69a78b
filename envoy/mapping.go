package envoy

import (
	"slices"
	"strconv"
	"strings"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/rules"
	"google.golang.org/protobuf/types/known/structpb"
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

// domain is the rate limits of one domain: one document of a mapping
// file, or, with [MergeDomains], several.
type domain struct {
	name      string
	file      string // where it was first defined, for errors
	line      int
	root      *level // nil when it has no descriptors
	unmatched Unmatched
	set       *rules.Set // nil when the domain has no counted limits
	// override is the template of limits a descriptor overrides
	// (RateLimitDescriptor.limit) when it matches no rate limit: the
	// defaults of the domain's first document, named
	// "<domain>.limit_override".
	override rules.Rule
}

// level is the descriptors at one depth under one parent.
type level struct {
	exact map[entry]*node  // key and value
	wild  []*node          // value with a '*', in file order
	any   map[string]*node // key only: any value
	all   []*node          // all of them, in file order
}

func newLevel() *level { return &level{exact: map[entry]*node{}, any: map[string]*node{}} }

// add adds n to lv, which has no descriptor of n's key and value yet.
func (lv *level) add(n *node) {
	switch {
	case n.value == "":
		lv.any[n.key] = n
	case n.parts != nil:
		lv.wild = append(lv.wild, n)
	default:
		lv.exact[entry{n.key, n.value}] = n
	}
	lv.all = append(lv.all, n)
}

// find returns the descriptor of lv with n's key and value, or nil.
func (lv *level) find(n *node) *node {
	switch {
	case n.value == "":
		return lv.any[n.key]
	case n.parts == nil:
		return lv.exact[entry{n.key, n.value}]
	}
	for _, w := range lv.wild {
		if w.key == n.key && w.value == n.value {
			return w
		}
	}
	return nil
}

// walk calls f for every node under lv.
func (lv *level) walk(f func(*node)) {
	if lv == nil {
		return
	}
	for _, n := range lv.all {
		f(n)
		n.next.walk(f)
	}
}

type entry struct{ key, value string }

// node is one descriptor of a mapping file.
type node struct {
	key, value string
	parts      []string // value split at '*', for a wildcard
	share      bool     // share_threshold: every value the wildcard matches shares one bucket
	limit      *limit   // nil: no rate_limit here
	next       *level   // nil: no nested descriptors
	line       int      // where the file gives it
}

// what names n's key and value for messages.
func (n *node) what() string {
	s := "key " + quote(n.key)
	if n.value != "" {
		s += " and value " + quote(n.value)
	}
	return s
}

// limit is a descriptor's rate_limit.
type limit struct {
	name      string // the rule's name, also what replaces refers to
	unlimited bool
	// banned is requests_per_unit: 0: every request is over the limit,
	// and none is counted; shadow is then the descriptor's shadow_mode.
	banned, shadow bool
	// quota is the descriptor's quota_mode: the limit refuses a request
	// only when every quota limit the request meets is over.
	quota    bool
	replaces []string
	rule     *rules.Rule // nil when unlimited or banned
	unit     rlsv3.RateLimitResponse_RateLimit_Unit
	rpu      uint32
	// metadata is the descriptor's, returned as dynamic metadata when
	// the limit passes (see WithDynamicMetadata); nil for none.
	metadata *structpb.Struct
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

// newRule builds a rate limit's rule. Its key is never called: the service
// builds each descriptor's hit itself.
func newRule(name string, l sluice.Limit, alg sluice.Algorithm, onFail rules.OnFail, shadow, hidden bool) rules.Rule {
	return rules.Rule{Name: name, Key: descriptorKey, Limit: l, Algorithm: alg, OnFail: onFail, Shadow: shadow, Hidden: hidden}
}
