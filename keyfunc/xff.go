package keyfunc

import (
	"net/http"
	"net/netip"
	"strings"
)

// MaxXFFHops is the largest number of X-Forwarded-For entries [XFF] walks.
// A chain with more trusted entries than that fails closed; real proxy
// chains are a handful of hops long.
const MaxXFFHops = 64

const xffHeader = "X-Forwarded-For"

// XFF returns an [IPResolver] for servers behind proxies that append the
// address of their peer to X-Forwarded-For, given the proxies' address
// ranges. It implements "rightmost untrusted":
//
//  1. The TCP peer (r.RemoteAddr, see [RemoteAddr]) is checked first. If it
//     is not inside a trusted prefix, it is the client and X-Forwarded-For is
//     ignored completely, so a client that reaches the server directly
//     cannot choose its key.
//  2. Otherwise all X-Forwarded-For field lines are merged in the order
//     received (so a duplicate header cannot hide entries) and the list is
//     walked from the right, skipping entries inside trusted prefixes. The
//     first entry that is not trusted is the client. Empty list elements are
//     skipped. Entries may carry a port ("192.0.2.1:4711",
//     "[2001:db8::1]:4711"), in the forms [RemoteAddr] lists.
//  3. A malformed entry stops the walk with an error wrapping [ErrNoKey]; it
//     never falls back to an entry further left, which the client wrote.
//  4. If every entry, and the peer, is a trusted proxy (including a trusted
//     peer that sent no X-Forwarded-For at all), the result is an error
//     wrapping [ErrNoKey]. This fails closed on purpose: the leftmost
//     entry could have been chosen by a host inside the trusted ranges, and
//     an over-broad prefix list (say 0.0.0.0/0) would otherwise make every
//     key forgeable, where this way it makes every request fail loudly.
//     Requests that originate at the proxies themselves, such as load
//     balancer health checks, therefore have no IP key: serve them outside
//     the limiter or exempt them with a bypass rule.
//  5. More than [MaxXFFHops] entries walked fails closed as well.
//
// Addresses are normalised (an IPv4-mapped IPv6 address becomes IPv4, an
// IPv6 zone is dropped) before they are compared with the prefixes and
// before they are returned. Prefixes are validated here: at
// least one is required, each must be valid, host bits are ignored and an
// IPv4-mapped prefix (::ffff:10.0.0.0/104) means its IPv4 equivalent
// (10.0.0.0/8). An IPv6 prefix never matches an IPv4 client and vice versa.
// Use [ParsePrefixes] to read prefixes from strings.
func XFF(trusted []netip.Prefix) (IPResolver, error) {
	set, err := newTrustSet(trusted)
	if err != nil {
		return nil, err
	}
	return set.fromTrustedPeer(func(r *http.Request) (netip.Addr, error) {
		return set.walkXFF(r.Header.Values(xffHeader))
	}), nil
}

// walkXFF finds the rightmost untrusted entry of the merged field lines.
// It looks at the lines lazily, from the right, without allocating.
func (t trustSet) walkXFF(lines []string) (netip.Addr, error) {
	hops := 0
	for i := len(lines) - 1; i >= 0; i-- {
		rest := lines[i]
		for rest != "" {
			var entry string
			if j := strings.LastIndexByte(rest, ','); j >= 0 {
				entry, rest = rest[j+1:], rest[:j]
			} else {
				entry, rest = rest, ""
			}
			entry = trimOWS(entry)
			if entry == "" {
				continue // an empty list element, allowed by RFC 9110 §5.6.1
			}
			if hops++; hops > MaxXFFHops {
				return netip.Addr{}, noKey("X-Forwarded-For has more than %d entries to walk", MaxXFFHops)
			}
			a, ok := parseAddr(entry)
			if !ok {
				return netip.Addr{}, noKey("malformed X-Forwarded-For entry %s (%d from the right)", clip(entry), hops)
			}
			if !t.contains(a) {
				return a, nil
			}
		}
	}
	if hops == 0 {
		return netip.Addr{}, noKey("trusted proxy sent no X-Forwarded-For entry")
	}
	return netip.Addr{}, noKey("every X-Forwarded-For entry is a trusted proxy")
}

// trimOWS removes optional whitespace (spaces and horizontal tabs) from
// both ends of s; unlike strings.TrimSpace it leaves other characters for
// the parser to reject.
func trimOWS(s string) string {
	return strings.Trim(s, " \t")
}
