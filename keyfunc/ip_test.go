package keyfunc_test

import (
	"errors"
	"net/http"
	"net/netip"
	"testing"

	"github.com/sluicehq/sluice/keyfunc"
)

func TestClientIPKeys(t *testing.T) {
	cases := []struct {
		name, remote, want string
	}{
		{"v4", "192.0.2.1:1234", "192.0.2.1"},
		{"v4_portless", "192.0.2.1", "192.0.2.1"},
		{"v4_mapped_equals_v4", "[::ffff:192.0.2.1]:1234", "192.0.2.1"},
		{"v6_grouped_by_64", "[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:1", "2001:db8:1:2::"},
		{"v6_same_64_other_host", "[2001:db8:1:2::1]:1", "2001:db8:1:2::"},
		{"v6_next_64", "[2001:db8:1:3::1]:1", "2001:db8:1:3::"},
		{"v6_zone_stripped", "[fe80::1:2:3:4%eth0]:1", "fe80::"},
		{"v6_loopback", "[::1]:1", "::"},
		{"nat64_keyed_by_v4", "[64:ff9b::192.0.2.1]:1", "192.0.2.1"},
		{"sixtofour_keyed_by_v4", "[2002:c000:201:7::1]:1", "192.0.2.1"},
	}
	fn := keyfunc.ClientIP()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := keyOf(t, fn, newReq(tc.remote)); got != tc.want {
				t.Fatalf("key for %q = %q, want %q", tc.remote, got, tc.want)
			}
		})
	}
}

func TestIPv6PrefixConfigurable(t *testing.T) {
	const addr = "[2001:db8:abcd:12ff:1:2:3:4]:1"
	cases := []struct {
		bits int
		want string
	}{
		{0, "2001:db8:abcd:12ff::"}, // default /64
		{32, "2001:db8::"},
		{48, "2001:db8:abcd::"},
		{56, "2001:db8:abcd:1200::"},
		{64, "2001:db8:abcd:12ff::"},
		{128, "2001:db8:abcd:12ff:1:2:3:4"},
	}
	for _, tc := range cases {
		fn, err := keyfunc.IP(keyfunc.IPConfig{IPv6Prefix: tc.bits})
		if err != nil {
			t.Fatal(err)
		}
		if got := keyOf(t, fn, newReq(addr)); got != tc.want {
			t.Errorf("/%d: key %q, want %q", tc.bits, got, tc.want)
		}
		// IPv4 is /32 whatever the IPv6 grouping.
		if got := keyOf(t, fn, newReq("198.51.100.7:1")); got != "198.51.100.7" {
			t.Errorf("/%d: IPv4 key %q", tc.bits, got)
		}
	}
	for _, bad := range []int{-1, 1, 16, 31, 129, 1000} {
		if _, err := keyfunc.IP(keyfunc.IPConfig{IPv6Prefix: bad}); err == nil {
			t.Errorf("IPv6Prefix %d accepted", bad)
		}
	}
}

func TestIPUnresolvable(t *testing.T) {
	boom := errors.New("resolver exploded")
	cases := []struct {
		name    string
		res     keyfunc.IPResolver
		remote  string
		wantErr error
	}{
		{"unix_socket_peer", nil, "@", keyfunc.ErrNoKey},
		{"empty_remote", nil, "", keyfunc.ErrNoKey},
		{"foreign_error_wrapped", func(*http.Request) (netip.Addr, error) { return netip.Addr{}, boom }, "192.0.2.1:1", boom},
		{"zero_addr_no_error", func(*http.Request) (netip.Addr, error) { return netip.Addr{}, nil }, "192.0.2.1:1", keyfunc.ErrNoKey},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fn, err := keyfunc.IP(keyfunc.IPConfig{Resolver: tc.res})
			if err != nil {
				t.Fatal(err)
			}
			key, err := fn.Identity(newReq(tc.remote))
			wantNoKey(t, err)
			if key != "" || !errors.Is(err, tc.wantErr) {
				t.Fatalf("got %q, %v; want no key and %v", key, err, tc.wantErr)
			}
		})
	}
}

func TestIPKeyNormalisesCustomResolverOutput(t *testing.T) {
	// A custom resolver that returns a mapped or zoned address still gets
	// the canonical key.
	for addr, want := range map[string]string{"::ffff:192.0.2.9": "192.0.2.9", "fe80::1:2:3:4%eth0": "fe80::1:2:3:4"} {
		res := func(*http.Request) (netip.Addr, error) {
			return netip.MustParseAddr(addr), nil
		}
		fn := must(keyfunc.IP(keyfunc.IPConfig{Resolver: res, IPv6Prefix: 128}))
		if got := keyOf(t, fn, newReq("@")); got != want {
			t.Fatalf("%s: key %q, want %q", addr, got, want)
		}
	}
}
