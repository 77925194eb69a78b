package keyfunc_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/keyfunc"
)

// spoofHeaders are the headers attackers set to choose their key.
var spoofHeaders = []string{
	"X-Forwarded-For: 203.0.113.66",
	"X-Forwarded-For: 10.0.0.1, 203.0.113.66",
	"X-Real-IP: 203.0.113.66",
	"True-Client-IP: 203.0.113.66",
	"CF-Connecting-IP: 203.0.113.66",
	"Forwarded: for=203.0.113.66",
	"X-Client-IP: 203.0.113.66",
}

// TestSpoofedHeadersIgnoredFromUntrustedPeer checks every configuration: a
// peer outside the trusted prefixes keys on its own address, whatever
// headers it sends.
func TestSpoofedHeadersIgnoredFromUntrustedPeer(t *testing.T) {
	trusted := prefixes(t, "10.0.0.0/8", "2001:db8:ffff::/48")
	resolvers := map[string]keyfunc.IPResolver{
		"default":           nil,
		"xff":               must(keyfunc.XFF(trusted)),
		"cf_header":         must(keyfunc.TrustedHeader("CF-Connecting-IP", trusted)),
		"x_real_ip_header":  must(keyfunc.TrustedHeader("X-Real-IP", trusted)),
		"true_client_ip_hd": must(keyfunc.TrustedHeader("True-Client-IP", trusted)),
	}
	peers := map[string]string{
		"198.51.100.7:5555":      "198.51.100.7",
		"[2001:db8:1:2::9]:5555": "2001:db8:1:2::",
		"198.51.100.7":           "198.51.100.7",
	}
	for rname, res := range resolvers {
		fn := must(keyfunc.IP(keyfunc.IPConfig{Resolver: res}))
		for peer, want := range peers {
			base := keyOf(t, fn, newReq(peer))
			if base != want {
				t.Fatalf("%s: peer %s without headers: key %q, want %q", rname, peer, base, want)
			}
			for _, h := range spoofHeaders {
				if got := keyOf(t, fn, newReq(peer, h)); got != want {
					t.Errorf("%s: peer %s with %q: key %q, want %q", rname, peer, h, got, want)
				}
			}
			all := newReq(peer, spoofHeaders...)
			if got := keyOf(t, fn, all); got != want {
				t.Errorf("%s: peer %s with every spoof header: key %q", rname, peer, got)
			}
		}
	}
}

func TestXFF(t *testing.T) {
	trusted := []string{"10.0.0.0/8", "192.168.0.0/16", "2001:db8:ffff::/48"}
	cases := []struct {
		name    string
		peer    string
		headers []string
		want    string // "" means an error wrapping ErrNoKey
	}{
		{"untrusted_peer_ignores_xff", "198.51.100.7:1", []string{"X-Forwarded-For: 203.0.113.1"}, "198.51.100.7"},
		{"one_hop", "10.0.0.1:1", []string{"X-Forwarded-For: 203.0.113.1"}, "203.0.113.1"},
		{"spoofed_left_of_client", "10.0.0.1:1", []string{"X-Forwarded-For: 1.1.1.1, 203.0.113.1"}, "203.0.113.1"},
		{"multi_hop_rightmost_untrusted", "10.0.0.1:1", []string{"X-Forwarded-For: 1.1.1.1, 203.0.113.1, 192.168.1.1, 10.9.9.9"}, "203.0.113.1"},
		{"spoofed_trusted_left_of_client", "10.0.0.1:1", []string{"X-Forwarded-For: 10.0.0.5, 203.0.113.1, 10.0.0.2"}, "203.0.113.1"},
		{"lines_merged_in_order", "10.0.0.1:1", []string{"X-Forwarded-For: 1.1.1.1", "X-Forwarded-For: 203.0.113.1, 10.0.0.3", "X-Forwarded-For: 10.0.0.2"}, "203.0.113.1"},
		{"duplicate_line_cannot_hide", "10.0.0.1:1", []string{"X-Forwarded-For: 203.0.113.1", "X-Forwarded-For: 203.0.113.99"}, "203.0.113.99"},
		{"no_spaces", "10.0.0.1:1", []string{"X-Forwarded-For: 1.1.1.1,203.0.113.1,10.0.0.2"}, "203.0.113.1"},
		{"tabs_and_empty_elements", "10.0.0.1:1", []string{"X-Forwarded-For: ,\t203.0.113.1 ,, 10.0.0.2,"}, "203.0.113.1"},
		{"entry_with_port", "10.0.0.1:1", []string{"X-Forwarded-For: 203.0.113.1:4711, 10.0.0.2:80"}, "203.0.113.1"},
		{"v6_entry_bracketed_port", "10.0.0.1:1", []string{"X-Forwarded-For: [2001:db8:1:2::5]:4711"}, "2001:db8:1:2::5"},
		{"v6_peer_and_hops", "[2001:db8:ffff::1]:1", []string{"X-Forwarded-For: 2001:db8:1:2::5, 2001:db8:ffff:1::1"}, "2001:db8:1:2::5"},
		{"mapped_client_folded", "10.0.0.1:1", []string{"X-Forwarded-For: ::ffff:203.0.113.1"}, "203.0.113.1"},
		{"mapped_trusted_hop_still_trusted", "10.0.0.1:1", []string{"X-Forwarded-For: 203.0.113.1, ::ffff:10.0.0.2"}, "203.0.113.1"},
		{"mapped_peer_trusted", "[::ffff:10.0.0.1]:1", []string{"X-Forwarded-For: 203.0.113.1"}, "203.0.113.1"},
		{"zoned_trusted_hop_still_trusted", "[2001:db8:ffff::1]:1", []string{"X-Forwarded-For: 203.0.113.1, 2001:db8:ffff::2%eth0"}, "203.0.113.1"},
		{"zone_text_is_opaque", "10.0.0.1:1", []string{"X-Forwarded-For: fe80::1%25eth0"}, "fe80::1"},
		{"zoned_client_stripped_plain", "10.0.0.1:1", []string{"X-Forwarded-For: fe80::1%eth0"}, "fe80::1"},
		{"portless_trusted_peer", "10.0.0.1", []string{"X-Forwarded-For: 203.0.113.1"}, "203.0.113.1"},
		// fail closed
		{"malformed_rightmost", "10.0.0.1:1", []string{"X-Forwarded-For: 203.0.113.1, garbage"}, ""},
		{"malformed_between_does_not_fall_back", "10.0.0.1:1", []string{"X-Forwarded-For: 203.0.113.1, bogus, 10.0.0.2"}, ""},
		{"malformed_unknown", "10.0.0.1:1", []string{"X-Forwarded-For: unknown"}, ""},
		{"malformed_obfuscated", "10.0.0.1:1", []string{"X-Forwarded-For: _gazonk"}, ""},
		{"malformed_in_later_line", "10.0.0.1:1", []string{"X-Forwarded-For: 203.0.113.1", "X-Forwarded-For: nope"}, ""},
		{"malformed_left_of_client_is_never_reached", "10.0.0.1:1", []string{"X-Forwarded-For: bogus, 203.0.113.1"}, "203.0.113.1"},
		{"all_trusted_fails_closed", "10.0.0.1:1", []string{"X-Forwarded-For: 10.0.0.5, 192.168.0.3"}, ""},
		{"trusted_peer_without_xff_fails_closed", "10.0.0.1:1", nil, ""},
		{"trusted_peer_empty_xff_fails_closed", "10.0.0.1:1", []string{"X-Forwarded-For: , ,"}, ""},
		{"unix_peer", "@", []string{"X-Forwarded-For: 203.0.113.1"}, ""},
	}
	fn := must(keyfunc.XFF(prefixes(t, trusted...)))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fn(newReq(tc.peer, tc.headers...))
			if tc.want == "" {
				wantNoKey(t, err)
				if got.IsValid() {
					t.Fatalf("got address %s together with error %v", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Fatalf("client = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestXFFHopLimit(t *testing.T) {
	fn := must(keyfunc.XFF(prefixes(t, "10.0.0.0/8")))
	hops := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf("10.0.%d.%d", i/256, i%256)
		}
		return strings.Join(s, ", ")
	}
	// The client right after MaxXFFHops-1 trusted hops is found...
	r := newReq("10.0.0.1:1", "X-Forwarded-For: 203.0.113.1, "+hops(keyfunc.MaxXFFHops-1))
	if got, err := fn(r); err != nil || got.String() != "203.0.113.1" {
		t.Fatalf("at the limit: %s, %v", got, err)
	}
	// ...one more trusted hop fails closed, without walking the rest.
	r = newReq("10.0.0.1:1", "X-Forwarded-For: 203.0.113.1, "+hops(keyfunc.MaxXFFHops))
	_, err := fn(r)
	wantNoKey(t, err)
	// A hostile header of 100k trusted entries is cut short too.
	r = newReq("10.0.0.1:1", "X-Forwarded-For: "+strings.Repeat("10.1.1.1,", 100000))
	_, err = fn(r)
	wantNoKey(t, err)
}

func TestXFFErrorDoesNotEchoHugeInput(t *testing.T) {
	fn := must(keyfunc.XFF(prefixes(t, "10.0.0.0/8")))
	bad := strings.Repeat("x", 64<<10)
	_, err := fn(newReq("10.0.0.1:1", "X-Forwarded-For: "+bad))
	wantNoKey(t, err)
	if n := strings.Count(err.Error(), "x"); n > 64 {
		t.Fatalf("error echoes %d bytes", n)
	}
}

func TestXFFConfigValidation(t *testing.T) {
	cases := []struct {
		name    string
		trusted []netip.Prefix
	}{
		{"nil", nil},
		{"empty", []netip.Prefix{}},
		{"zero_prefix", []netip.Prefix{{}}},
		{"bad_bits", []netip.Prefix{netip.PrefixFrom(netip.MustParseAddr("10.0.0.0"), 33)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := keyfunc.XFF(tc.trusted); err == nil {
				t.Fatal("XFF accepted invalid trusted prefixes")
			}
			if _, err := keyfunc.TrustedHeader("CF-Connecting-IP", tc.trusted); err == nil {
				t.Fatal("TrustedHeader accepted invalid trusted prefixes")
			}
		})
	}
}

func TestTrustedPrefixNormalisation(t *testing.T) {
	// A v4-mapped prefix means its IPv4 equivalent; host bits are ignored;
	// the caller's slice is left alone.
	in := []netip.Prefix{netip.MustParsePrefix("::ffff:10.0.0.0/104"), netip.MustParsePrefix("192.168.1.1/16")}
	orig := append([]netip.Prefix(nil), in...)
	fn := must(keyfunc.XFF(in))
	for _, peer := range []string{"10.2.3.4:1", "192.168.77.1:1", "[::ffff:10.2.3.4]:1"} {
		got, err := fn(newReq(peer, "X-Forwarded-For: 203.0.113.1"))
		if err != nil || got.String() != "203.0.113.1" {
			t.Errorf("peer %s: %s, %v; want the peer trusted", peer, got, err)
		}
	}
	for i := range in {
		if in[i] != orig[i] {
			t.Fatalf("XFF modified its argument: %v", in)
		}
	}
	// An IPv6 prefix does not make IPv4 peers trusted.
	fn = must(keyfunc.XFF(prefixes(t, "::/0")))
	if got, err := fn(newReq("198.51.100.7:1", "X-Forwarded-For: 203.0.113.1")); err != nil || got.String() != "198.51.100.7" {
		t.Fatalf("::/0 trusted an IPv4 peer: %s, %v", got, err)
	}
}

func TestParsePrefixes(t *testing.T) {
	got, err := keyfunc.ParsePrefixes("10.0.0.0/8", " 192.0.2.10 ", "::1", "2400:cb00::/32")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.0/8", "192.0.2.10/32", "::1/128", "2400:cb00::/32"}
	for i, p := range got {
		if p.String() != want[i] {
			t.Errorf("prefix %d = %s, want %s", i, p, want[i])
		}
	}
	for _, bad := range []string{"", "10.0.0.0/33", "example.com", "fe80::1%eth0", "10.0.0.0/8/8", "2001:db8::/129"} {
		if _, err := keyfunc.ParsePrefixes("10.0.0.0/8", bad); err == nil {
			t.Errorf("ParsePrefixes accepted %q", bad)
		} else if !strings.Contains(err.Error(), "#2") {
			t.Errorf("error %q does not name the position", err)
		}
	}
}
