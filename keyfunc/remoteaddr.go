package keyfunc

import (
	"net/http"
	"net/netip"
	"strings"
)

// RemoteAddr is the [IPResolver] for servers exposed directly to clients: it
// returns the address of the TCP peer, r.RemoteAddr, with the port removed
// and normalised with [Normalize]. It never reads a header, so a client
// cannot choose its key; behind a proxy, though, every client shares the
// proxy's address (use [XFF] or [TrustedHeader] there).
//
// Besides "ip:port" and "[ipv6]:port", as set by net/http, it accepts a bare
// address without a port (some test servers and middlewares set one). A
// Unix-socket peer ("", "@", or a socket path) has no IP address and fails
// with an error wrapping [ErrNoKey], as does anything else that does not
// parse (see [ParseAddr]).
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
