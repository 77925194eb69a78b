package keyfunc_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/keyfunc"
)

// FuzzParsePrefixes: any inputs give an error or one valid prefix each,
// never a panic; a prefix's text parses back to it, the error echoes at
// most 48 bytes of the input (quoted), and what parses is accepted by XFF.
func FuzzParsePrefixes(f *testing.F) {
	for _, c := range [][2]string{
		{"10.0.0.0/8", "2400:cb00::/32"}, {"192.0.2.10", "::1"}, {" 10.0.0.0/8 ", ""},
		{"fe80::1%eth0", "10.0.0.0/8"}, {"10.0.0.1/8", "::ffff:10.0.0.0/104"}, {"10.0.0.0/33", "1.2.3.4"},
		{"/", "0.0.0.0/0"}, {"::/0", "010.0.0.1"}, {"1.2.3.4/-1", "\xff"}, {"fe80::%zone/64", "1.2.3.4/08"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ps, err := keyfunc.ParsePrefixes(a, b)
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "keyfunc: ") || len(msg) > 320 {
				t.Errorf("ParsePrefixes(%q, %q): %d-byte error %q, want a short prefixed one", a, b, len(msg), msg)
			}
			if ps != nil {
				t.Errorf("ParsePrefixes(%q, %q) = %v with an error", a, b, ps)
			}
			return
		}
		if len(ps) != 2 {
			t.Fatalf("ParsePrefixes(%q, %q) = %d prefixes, want 2", a, b, len(ps))
		}
		for i, p := range ps {
			if !p.IsValid() || p.Addr().Zone() != "" {
				t.Fatalf("ParsePrefixes(%q, %q)[%d] = %v: invalid or zoned", a, b, i, p)
			}
			again, err := keyfunc.ParsePrefixes(p.String())
			if err != nil || again[0] != p {
				t.Errorf("%v's text parses to %v, %v", p, again, err)
			}
		}
		if _, err := keyfunc.XFF(ps); err != nil {
			t.Errorf("XFF refuses what ParsePrefixes(%q, %q) returned (%v): %v", a, b, ps, err)
		}
	})
}
