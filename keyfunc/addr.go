package keyfunc

import (
	"net/netip"
	"strings"
)

// Normalize returns the form of a that trust checks and keys use: an
// IPv4-mapped IPv6 address (::ffff:a.b.c.d) becomes the IPv4 address
// a.b.c.d, and an IPv6 zone (fe80::1%eth0) is dropped. The zero Addr stays
// the zero Addr.
func Normalize(a netip.Addr) netip.Addr {
	return a.WithZone("").Unmap()
}

// ParseAddr parses one address as it appears in r.RemoteAddr or in a
// forwarding header entry and normalises it with [Normalize]. It accepts
//
//	192.0.2.1            an IPv4 address
//	192.0.2.1:8080       an IPv4 address and port
//	2001:db8::1          an IPv6 address, optionally with a zone (fe80::1%eth0)
//	[2001:db8::1]        a bracketed IPv6 address
//	[2001:db8::1]:8080   a bracketed IPv6 address and port
//
// The port, if any, must be a decimal number no larger than 65535 and is
// discarded. Host names, obfuscated identifiers ("_hidden", "unknown"),
// IPv4 addresses with leading zeros and anything else fail with an error
// wrapping [ErrNoKey] that quotes at most a short prefix of s.
func ParseAddr(s string) (netip.Addr, error) {
	a, ok := parseAddr(s)
	if !ok {
		return netip.Addr{}, noKey("%s is not an IP address", clip(s))
	}
	return a, nil
}

// parseAddr is ParseAddr without the error message.
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
	return Normalize(a), true
}
