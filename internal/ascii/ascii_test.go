package ascii

import "testing"

func TestPrintable(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"", true},
		{"per-ip", true},
		{" ~", true},
		{"a\tb", false},
		{"a\x1fb", false},
		{"a\x7fb", false},
		{"café", false},
	} {
		if got := Printable(tc.s); got != tc.want {
			t.Errorf("Printable(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}
