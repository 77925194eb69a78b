package keyfunc

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/sluicehq/sluice/internal/ident"
)

// ParsePrefixes parses trusted proxy ranges for [XFF] and [TrustedHeader].
// Each string is a CIDR prefix ("10.0.0.0/8", "2400:cb00::/32") or a single
// address ("192.0.2.10", "::1"), which stands for itself (/32 or /128).
// Zones are not allowed. The error names the first string that does not
// parse, by position.
func ParsePrefixes(cidrs ...string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(cidrs))
	for i, s := range cidrs {
		s = strings.TrimSpace(s)
		var p netip.Prefix
		var err error
		if strings.Contains(s, "/") {
			p, err = netip.ParsePrefix(s)
		} else {
			var a netip.Addr
			if a, err = netip.ParseAddr(s); err == nil {
				if a.Zone() != "" {
					err = errors.New("zones are not allowed")
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
		}
		if err != nil {
			return nil, fmt.Errorf("keyfunc: trusted prefix #%d %s: not a CIDR prefix or IP address", i+1, clip(s))
		}
		out = append(out, p)
	}
	return out, nil
}

// trustSet is a validated, normalised list of trusted proxy prefixes.
type trustSet []netip.Prefix

// newTrustSet validates prefixes and normalises them: host bits are masked
// off, and a prefix inside the IPv4-mapped range (::ffff:0:0/96 or longer)
// becomes the equivalent IPv4 prefix, because addresses are unmapped
// before they are checked. The caller's slice is not modified.
func newTrustSet(prefixes []netip.Prefix) (trustSet, error) {
	if len(prefixes) == 0 {
		return nil, errors.New("keyfunc: at least one trusted proxy prefix is required")
	}
	set := make(trustSet, 0, len(prefixes))
	for i, p := range prefixes {
		if !p.IsValid() {
			return nil, fmt.Errorf("keyfunc: trusted prefix #%d is not a valid prefix", i+1)
		}
		set = append(set, ident.NormalizePrefix(p))
	}
	return set, nil
}

// contains reports whether the normalised address a is a trusted proxy.
func (t trustSet) contains(a netip.Addr) bool {
	for _, p := range t {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// fromTrustedPeer returns a resolver that answers with the TCP peer's
// address, unless the peer is in t: only then does it believe the headers,
// through fromHeaders. A client that reaches the server directly cannot
// choose its address by sending a header.
func (t trustSet) fromTrustedPeer(fromHeaders IPResolver) IPResolver {
	return func(r *http.Request) (netip.Addr, error) {
		peer, err := RemoteAddr(r)
		if err != nil || !t.contains(peer) {
			return peer, err
		}
		return fromHeaders(r)
	}
}
