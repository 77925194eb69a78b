package keyfunc

import (
	"fmt"
	"net/http"
	"net/netip"
)

// TrustedHeader returns an [IPResolver] for servers behind an edge that
// overwrites one header with the client address on every request, such as
// Cloudflare's CF-Connecting-IP or nginx's X-Real-IP, given the edge's
// address ranges.
//
// The header is read only when the TCP peer (see [RemoteAddr]) is inside a
// trusted prefix; from any other peer it is ignored completely and the peer
// is the client. If the header arrives more than once, the last value wins:
// it was written by the hop closest to the server. A missing header, or a
// last value that is not exactly one address (in a form [RemoteAddr] lists), is an error
// wrapping [ErrNoKey]; earlier values are never used instead.
//
// Name only a header your edge overwrites. True-Client-IP,
// Fastly-Client-IP and X-Azure-ClientIP, among others, are passed through
// from the client by some products unless the edge is configured to strip
// them. X-Forwarded-For and Forwarded are lists: use [XFF] for them.
//
// The name must be a valid header field name and the prefixes follow the
// rules of [XFF]; TrustedHeader returns an error otherwise.
func TrustedHeader(name string, trusted []netip.Prefix) (IPResolver, error) {
	canonical, err := headerName(name)
	if err != nil {
		return nil, err
	}
	switch canonical {
	case xffHeader, "Forwarded":
		return nil, fmt.Errorf("keyfunc: TrustedHeader(%q): the header is a list of hops; use XFF", canonical)
	}
	set, err := newTrustSet(trusted)
	if err != nil {
		return nil, err
	}
	return set.fromTrustedPeer(func(r *http.Request) (netip.Addr, error) {
		values := r.Header.Values(canonical)
		if len(values) == 0 {
			return netip.Addr{}, noKey("trusted proxy sent no %s header", canonical)
		}
		v := trimOWS(values[len(values)-1])
		a, ok := parseAddr(v)
		if !ok {
			return netip.Addr{}, noKey("malformed %s header %s", canonical, clip(v))
		}
		return a, nil
	}), nil
}
