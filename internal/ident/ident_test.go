package ident_test

import (
	"net/netip"
	"testing"

	"github.com/sluicehq/sluice/internal/ident"
)

func TestNormalize(t *testing.T) {
	cases := []struct{ in, want string }{
		{"::ffff:10.1.2.3", "10.1.2.3"},
		{"fe80::1%eth0", "fe80::1"},
		{"10.1.2.3", "10.1.2.3"},
		{"2001:db8::1", "2001:db8::1"},
	}
	for _, tc := range cases {
		if got := ident.Normalize(netip.MustParseAddr(tc.in)); got.String() != tc.want {
			t.Errorf("Normalize(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
	if got := ident.Normalize(netip.Addr{}); got.IsValid() {
		t.Errorf("Normalize(zero) = %s, want the zero Addr", got)
	}
}

func TestIPKey(t *testing.T) {
	for _, tc := range []struct {
		in   string
		bits int
		want string
	}{
		{"192.0.2.1", 64, "192.0.2.1"},
		{"::ffff:192.0.2.1", 64, "192.0.2.1"},
		{"fe80::1:2:3:4%eth0", 128, "fe80::1:2:3:4"},
		{"2001:db8:1:2:3:4:5:6", 48, "2001:db8:1::"},
		{"2001:db8:1:2:3:4:5:6", 64, "2001:db8:1:2::"},
		{"64:ff9b::192.0.2.1", 64, "192.0.2.1"},
		{"2002:c000:201::1", 128, "192.0.2.1"},
	} {
		if got := ident.IPKey(netip.MustParseAddr(tc.in), tc.bits); got != tc.want {
			t.Errorf("IPKey(%s, %d) = %q, want %q", tc.in, tc.bits, got, tc.want)
		}
	}
}

func TestNormalizePrefix(t *testing.T) {
	for in, want := range map[string]string{
		"10.1.2.3/8":          "10.0.0.0/8",
		"::ffff:10.0.0.0/104": "10.0.0.0/8",
		"::ffff:0:0/96":       "0.0.0.0/0",
		"2001:db8::1/32":      "2001:db8::/32",
		"::ffff:10.0.0.0/80":  "::/80",
	} {
		if got := ident.NormalizePrefix(netip.MustParsePrefix(in)); got.String() != want {
			t.Errorf("NormalizePrefix(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestEndpointKey(t *testing.T) {
	cases := []struct {
		method, pattern, want string
	}{
		{"GET", "/users/{id}", "GET /users/{id}"},
		{"POST", "/users/{id}", "POST /users/{id}"},
		{"GET", "GET /users/{id}", "GET /users/{id}"},
		{"HEAD", "GET /users/{id}", "HEAD /users/{id}"},
		{"GET", "GET\t /x", "GET /x"},
		{"GET", "example.com/x/", "GET example.com/x/"},
		{"GET", "GET example.com/x/", "GET example.com/x/"},
		{"QUERY", "/search", "QUERY /search"},
		{"", "/x", "GET /x"},
		// unusual methods fold, unless the pattern names them
		{"FROBNICATE", "/x", "<other> /x"},
		{"get", "/x", "<other> /x"},
		{"PURGE", "PURGE /cache", "PURGE /cache"},
		// unmatched
		{"GET", "", "GET <unmatched>"},
		{"DELETE", "", "DELETE <unmatched>"},
		{"X-RANDOM-1234", "", "<other> <unmatched>"},
	}
	for _, tc := range cases {
		if got := ident.EndpointKey(tc.method, tc.pattern); got != tc.want {
			t.Errorf("EndpointKey(%q, %q) = %q, want %q", tc.method, tc.pattern, got, tc.want)
		}
	}
}

func TestIsToken(t *testing.T) {
	for s, want := range map[string]bool{"X-API-Key": true, "GET": true, "!#$%&'*+-.^_`|~": true, "": false, "X API Key": false, "X-Key:": false, "é": false} {
		if got := ident.IsToken(s); got != want {
			t.Errorf("IsToken(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestColocatable(t *testing.T) {
	for kind, want := range map[string]bool{"ip": false, "endpoint": false, "global": false, "user": true, "api_key": true, "header:X-Tenant": true} {
		if got := ident.Colocatable(kind); got != want {
			t.Errorf("Colocatable(%q) = %v, want %v", kind, got, want)
		}
	}
}
