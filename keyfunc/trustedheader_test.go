package keyfunc_test

import (
	"testing"

	"github.com/sluicehq/sluice/keyfunc"
)

func TestTrustedHeader(t *testing.T) {
	cases := []struct {
		name    string
		peer    string
		headers []string
		want    string // "" means an error wrapping ErrNoKey
	}{
		{"trusted_peer_header_used", "173.245.48.1:1", []string{"CF-Connecting-IP: 203.0.113.1"}, "203.0.113.1"},
		{"lowercase_name_on_wire", "173.245.48.1:1", []string{"cf-connecting-ip: 203.0.113.1"}, "203.0.113.1"},
		{"v6_value", "173.245.48.1:1", []string{"CF-Connecting-IP: 2001:db8::7"}, "2001:db8::7"},
		{"mapped_value_folded", "173.245.48.1:1", []string{"CF-Connecting-IP: ::ffff:203.0.113.1"}, "203.0.113.1"},
		{"last_value_wins", "173.245.48.1:1", []string{"CF-Connecting-IP: 1.1.1.1", "CF-Connecting-IP: 203.0.113.1"}, "203.0.113.1"},
		{"untrusted_peer_header_ignored", "198.51.100.7:1", []string{"CF-Connecting-IP: 203.0.113.1"}, "198.51.100.7"},
		{"untrusted_peer_no_header", "198.51.100.7:1", nil, "198.51.100.7"},
		{"other_headers_ignored", "173.245.48.1:1", []string{"X-Forwarded-For: 1.1.1.1", "CF-Connecting-IP: 203.0.113.1"}, "203.0.113.1"},
		// fail closed
		{"missing_header", "173.245.48.1:1", []string{"X-Forwarded-For: 1.1.1.1"}, ""},
		{"empty_header", "173.245.48.1:1", []string{"CF-Connecting-IP: "}, ""},
		{"malformed_last_no_fallback", "173.245.48.1:1", []string{"CF-Connecting-IP: 203.0.113.1", "CF-Connecting-IP: nope"}, ""},
		{"list_value", "173.245.48.1:1", []string{"CF-Connecting-IP: 203.0.113.1, 1.1.1.1"}, ""},
		{"unix_peer", "@", []string{"CF-Connecting-IP: 203.0.113.1"}, ""},
	}
	fn := must(keyfunc.TrustedHeader("cf-connecting-ip", prefixes(t, "173.245.48.0/20")))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fn(newReq(tc.peer, tc.headers...))
			if tc.want == "" {
				wantNoKey(t, err)
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

func TestTrustedHeaderConfigValidation(t *testing.T) {
	trusted := prefixes(t, "10.0.0.0/8")
	for _, name := range []string{"", "CF Connecting IP", "X-Bad:Name", "X-\nInjected", "X-Forwarded-For", "x-forwarded-for", "Forwarded"} {
		if _, err := keyfunc.TrustedHeader(name, trusted); err == nil {
			t.Errorf("TrustedHeader(%q) accepted", name)
		}
	}
}
