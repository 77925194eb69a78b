package keyfunc_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/keyfunc"
)

func TestParseAddr(t *testing.T) {
	cases := []struct {
		name, in, want string // want "" means an error
	}{
		// accepted forms
		{"v4", "192.0.2.1", "192.0.2.1"},
		{"v4_port", "192.0.2.1:8080", "192.0.2.1"},
		{"v6", "2001:db8::1", "2001:db8::1"},
		{"v6_bracketed", "[2001:db8::1]", "2001:db8::1"},
		{"v6_bracketed_port", "[2001:db8::1]:443", "2001:db8::1"},
		{"v6_zone_stripped", "fe80::1%eth0", "fe80::1"},
		{"v6_zone_bracketed_port", "[fe80::1%eth0]:80", "fe80::1"},
		{"v4_mapped_folded", "::ffff:192.0.2.1", "192.0.2.1"},
		{"v4_mapped_hex_folded", "::ffff:c000:201", "192.0.2.1"},
		{"v4_mapped_bracketed_port", "[::ffff:192.0.2.1]:80", "192.0.2.1"},
		{"port_zero", "192.0.2.1:0", "192.0.2.1"},
		{"port_max", "192.0.2.1:65535", "192.0.2.1"},
		// rejected forms
		{"empty", "", ""},
		{"hostname", "example.com", ""},
		{"hostname_port", "example.com:80", ""},
		{"unknown", "unknown", ""},
		{"obfuscated", "_hidden", ""},
		{"v4_leading_zero", "192.000.2.1", ""},
		{"v4_short", "192.0.2", ""},
		{"v4_bracketed", "[192.0.2.1]", ""},
		{"v4_bracketed_port", "[192.0.2.1]:80", ""},
		{"v6_port_unbracketed", "2001:db8::1:80:90:1:2:3", ""},
		{"port_too_big", "192.0.2.1:65536", ""},
		{"port_empty", "192.0.2.1:", ""},
		{"port_sign", "192.0.2.1:+80", ""},
		{"port_text", "192.0.2.1:http", ""},
		{"bracket_open", "[2001:db8::1", ""},
		{"empty_brackets", "[]", ""},
		{"inner_space", "192.0.2.1 ", ""},
		{"list", "192.0.2.1, 192.0.2.2", ""},
		{"v4_zone", "192.0.2.1%eth0", ""},
		{"cidr", "192.0.2.0/24", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := keyfunc.ParseAddr(tc.in)
			if ok != (tc.want != "") {
				t.Fatalf("ParseAddr(%q) = %s, %v", tc.in, got, ok)
			}
			if !ok {
				return
			}
			if got.String() != tc.want {
				t.Fatalf("ParseAddr(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestRemoteAddrErrorTruncatesInput(t *testing.T) {
	huge := strings.Repeat("A", 1<<20)
	_, err := keyfunc.RemoteAddr(newReq(huge))
	wantNoKey(t, err)
	if strings.Count(err.Error(), "A") > 64 {
		t.Fatalf("error echoes %d bytes of input", strings.Count(err.Error(), "A"))
	}
	_, err = keyfunc.RemoteAddr(newReq("\x1b[2J\n"))
	if strings.ContainsAny(err.Error(), "\x1b\n") {
		t.Fatalf("error %q contains raw control characters", err)
	}
}

func TestRemoteAddr(t *testing.T) {
	cases := []struct {
		name, remote, want string // want "" means an error
		errHas             string
	}{
		{"v4_port", "192.0.2.1:1234", "192.0.2.1", ""},
		{"v4_portless", "192.0.2.1", "192.0.2.1", ""},
		{"v6_bracketed_port", "[2001:db8::1]:1234", "2001:db8::1", ""},
		{"v6_bracketed_portless", "[2001:db8::1]", "2001:db8::1", ""},
		{"v6_bare", "2001:db8::1", "2001:db8::1", ""},
		{"v6_zone", "[fe80::1%eth0]:1234", "fe80::1", ""},
		{"v6_zone_bare", "fe80::1%eth0", "fe80::1", ""},
		{"v4_mapped_dual_stack", "[::ffff:192.0.2.1]:1234", "192.0.2.1", ""},
		{"unix_empty", "", "", "Unix-socket"},
		{"unix_unnamed", "@", "", "Unix socket"},
		{"unix_abstract", "@sluice.sock", "", "Unix socket"},
		{"unix_path", "/run/app.sock", "", "Unix socket"},
		{"garbage", "not-an-ip:80", "", "not an IP address"},
		{"pipe", "pipe", "", "not an IP address"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := keyfunc.RemoteAddr(newReq(tc.remote))
			if tc.want == "" {
				wantNoKey(t, err)
				if !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("error %q does not mention %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Fatalf("RemoteAddr(%q) = %s, want %s", tc.remote, got, tc.want)
			}
		})
	}
}
