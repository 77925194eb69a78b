package sluice_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
)

// FuzzParseAlgorithm: any input gives an error or a valid algorithm, never
// a panic; an algorithm's name parses back to it, and an accepted input is
// its name up to case, "-" for "_" and surrounding space.
func FuzzParseAlgorithm(f *testing.F) {
	for _, s := range []string{
		"token_bucket", "sliding_window", "fixed_window", "sliding_log",
		"Token-Bucket", " SLIDING_LOG\t", "", "-", "_", "token bucket", "gcra",
		"token_bucket\x00", "\xff\xfe", "Algorithm(4)", "fixed_window_", "İ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := sluice.ParseAlgorithm(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "sluice: ") {
				t.Errorf("ParseAlgorithm(%q): error without the package prefix: %v", s, err)
			}
			return
		}
		if !a.Valid() {
			t.Fatalf("ParseAlgorithm(%q) = %v, not a valid algorithm", s, a)
		}
		if got := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "-", "_"); got != a.String() {
			t.Errorf("ParseAlgorithm(%q) = %v, but the input reads %q", s, a, got)
		}
		if b, err := sluice.ParseAlgorithm(a.String()); err != nil || b != a {
			t.Errorf("ParseAlgorithm(%q) = %v, %v; want %v", a.String(), b, err, a)
		}
	})
}
