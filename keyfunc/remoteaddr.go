package keyfunc

import (
	"net/http"
	"net/netip"
	"strings"
)

// RemoteAddr is the [IPResolver] for servers exposed directly to clients: it
// returns the address of the TCP peer, r.RemoteAddr, with the port removed
// and normalised (an IPv4-mapped IPv6 address becomes IPv4, an IPv6 zone is
// dropped). It never reads a header, so a client cannot choose its key;
// behind a proxy, though, every client shares the proxy's address (use
// [XFF] or [TrustedHeader] there).
//
// Besides "ip:port" and "[ipv6]:port", as set by net/http, it accepts a bare
// address without a port (some test servers and middlewares set one):
//
//	192.0.2.1            an IPv4 address
//	192.0.2.1:8080       an IPv4 address and port
//	2001:db8::1          an IPv6 address, optionally with a zone (fe80::1%eth0)
//	[2001:db8::1]        a bracketed IPv6 address
//	[2001:db8::1]:8080   a bracketed IPv6 address and port
//
// The port, if any, must be a decimal number no larger than 65535 and is
// discarded. A Unix-socket peer ("", "@", or a socket path) has no IP
// address and fails with an error wrapping [ErrNoKey], as do host names,
// obfuscated identifiers ("_hidden", "unknown"), IPv4 addresses with
// leading zeros and anything else. [XFF] and [TrustedHeader] read header
// entries in the same forms.
func RemoteAddr(r *http.Request) (netip.Addr, error) {
	return parseRemoteAddr(r.RemoteAddr)
}

// parseRemoteAddr parses the value of r.RemoteAddr.
func parseRemoteAddr(s string) (netip.Addr, error) {
	if a, ok := parseAddr(s); ok {
		return a, nil
	}
	switch {
	case s == "":
		return netip.Addr{}, noKey("empty RemoteAddr (a Unix-socket peer or a hand-made request): no client IP")
	case s[0] == '@' || strings.Contains(s, "/"):
		return netip.Addr{}, noKey("RemoteAddr %s is a Unix socket: no client IP", clip(s))
	}
	return netip.Addr{}, noKey("RemoteAddr %s is not an IP address", clip(s))
}
