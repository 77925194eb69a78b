package keyfunc

import (
	"fmt"
	"net/http"
	"net/netip"

	"github.com/sluicehq/sluice/internal/ident"
)

// IPResolver finds the client address of a request. The resolvers of this
// package, [RemoteAddr], [XFF] and [TrustedHeader], return normalised
// addresses (an IPv4-mapped IPv6 address becomes IPv4, an IPv6 zone is
// dropped) or an error wrapping [ErrNoKey].
type IPResolver func(*http.Request) (netip.Addr, error)

// IPv6 grouping bounds, in prefix bits; see [IPConfig].
const (
	// DefaultIPv6Prefix is the IPv6 grouping used when none is configured:
	// a /64, the block a client typically controls.
	DefaultIPv6Prefix = 64
	// MinIPv6Prefix is the coarsest grouping accepted: a /32 is a typical
	// allocation to a whole ISP, so anything coarser merges unrelated
	// networks.
	MinIPv6Prefix = 32
)

// IPConfig configures [IP]. The zero value keys on the direct peer address,
// IPv6 grouped by /64.
type IPConfig struct {
	// Resolver finds the client address. Nil means RemoteAddr: the TCP
	// peer, no header trusted.
	Resolver IPResolver

	// IPv6Prefix is how many leading bits of an IPv6 address identify a
	// client. 0 means DefaultIPv6Prefix (64): a client typically controls
	// a whole /64, so keying on more bits lets it rotate through fresh
	// buckets. Use 56 or 48 where clients are delegated larger blocks, 128
	// to key on full addresses. Values below MinIPv6Prefix (32) or above 128
	// are rejected. IPv4 addresses are always keyed as a whole (/32).
	IPv6Prefix int
}

// IP returns the Key, of kind "ip", whose identity is the client address
// found by cfg.Resolver, normalised (as [IPResolver] says) whatever the
// resolver, in canonical text form: IPv4 addresses whole ("192.0.2.1"),
// IPv6 addresses masked to the grouping and printed in RFC 5952 form
// ("2001:db8:1:2::" for any address in 2001:db8:1:2::/64), and addresses
// that embed an IPv4 address (NAT64 64:ff9b::/96, 6to4 2002::/16) as that
// IPv4 address, since one IPv4 client or site owns all of them.
// Resolution failures wrap [ErrNoKey]. IP returns an error if cfg is
// invalid (an IPv6 prefix out of range, which may come from configuration).
func IP(cfg IPConfig) (Key, error) {
	bits := cfg.IPv6Prefix
	if bits == 0 {
		bits = DefaultIPv6Prefix
	}
	if err := checkIPv6Prefix(bits); err != nil {
		return Key{}, err
	}
	resolve := cfg.Resolver
	if resolve == nil {
		resolve = RemoteAddr
	}
	return Key{kind: "ip", form: ipForm(bits), fn: func(r *http.Request) (string, error) {
		a, err := resolve(r)
		if err != nil {
			return "", wrapNoKey(err)
		}
		if !a.IsValid() {
			return "", noKey("the IP resolver returned no address")
		}
		return ident.IPKey(a, bits), nil
	}}, nil
}

// ClientIP returns the Key for servers exposed directly to clients: the
// TCP peer address (see [RemoteAddr]), IPv6 grouped by /64. It is
// IP(IPConfig{}). Behind a proxy use [IP] with [XFF] or [TrustedHeader].
func ClientIP() Key {
	k, err := IP(IPConfig{})
	if err != nil {
		panic(err) // cannot happen: the zero IPConfig is valid
	}
	return k
}

// checkIPv6Prefix checks an IPv6 grouping.
func checkIPv6Prefix(bits int) error {
	if bits < MinIPv6Prefix || bits > 128 {
		return fmt.Errorf("keyfunc: IPv6 prefix /%d out of range /%d to /128", bits, MinIPv6Prefix)
	}
	return nil
}
