package keyfunc

import (
	"net/netip"
	"strings"

	"github.com/sluicehq/sluice/internal/ident"
)

// parseAddr parses one address as it appears in r.RemoteAddr or in a
// forwarding header entry, in the forms [RemoteAddr] lists, and normalises
// it: an IPv4-mapped IPv6 address becomes IPv4 and a zone is dropped.
func parseAddr(s string) (netip.Addr, bool) {
	var a netip.Addr
	switch {
	case s == "":
		return netip.Addr{}, false
	case s[0] == '[' && s[len(s)-1] == ']':
		// Bracketed IPv6 without a port.
		var err error
		if a, err = netip.ParseAddr(s[1 : len(s)-1]); err != nil || !a.Is6() {
			return netip.Addr{}, false
		}
	case s[0] == '[' || strings.Count(s, ":") == 1:
		// [IPv6]:port or IPv4:port. ParseAddrPort insists on brackets
		// exactly around IPv6 addresses and on a numeric 16-bit port.
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return netip.Addr{}, false
		}
		a = ap.Addr()
	default:
		var err error
		if a, err = netip.ParseAddr(s); err != nil {
			return netip.Addr{}, false
		}
	}
	return ident.Normalize(a), true
}
