package ident

import "net/netip"

// Normalize returns the form of a that trust checks and keys use: an
// IPv4-mapped IPv6 address (::ffff:a.b.c.d) becomes the IPv4 address
// a.b.c.d, and an IPv6 zone (fe80::1%eth0) is dropped. The zero Addr stays
// the zero Addr.
func Normalize(a netip.Addr) netip.Addr {
	return a.WithZone("").Unmap()
}

// NormalizePrefix returns p with its host bits masked off and, for a prefix
// inside the IPv4-mapped range (::ffff:0:0/96 or longer), as the equivalent
// IPv4 prefix: addresses are unmapped before they are compared with it (see
// [Normalize]).
func NormalizePrefix(p netip.Prefix) netip.Prefix {
	p = p.Masked()
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p
}

// IPKey returns the key of the valid address a with IPv6 grouped by
// ipv6Prefix bits, which the caller has checked (32 to 128). The address
// is normalised first (see [Normalize]). IPv4 addresses are returned
// whole; IPv6 addresses are masked to the prefix and printed in canonical
// RFC 5952 form ("2001:db8:1:2::"); addresses that embed an IPv4 address
// (NAT64 64:ff9b::/96 and 6to4 2002::/16) give that IPv4 address, because
// one IPv4 client or site owns all of them.
func IPKey(a netip.Addr, ipv6Prefix int) string {
	return groupAddr(Normalize(a), ipv6Prefix).String()
}

var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// groupAddr maps a normalised address to the address that names its group.
func groupAddr(a netip.Addr, ipv6Prefix int) netip.Addr {
	if a.Is4() {
		return a
	}
	b := a.As16()
	switch {
	case nat64Prefix.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16]))
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6]))
	}
	p, _ := a.Prefix(ipv6Prefix) // cannot fail: a is IPv6 without a zone, bits checked
	return p.Addr()
}
