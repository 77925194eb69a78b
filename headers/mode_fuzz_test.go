package headers_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/headers"
)

// FuzzParseMode: any input gives an error or a mode made only of known
// modes, never a panic; the mode's text parses back to it, and
// UnmarshalText agrees with ParseMode.
func FuzzParseMode(f *testing.F) {
	for _, s := range []string{
		"ietf", "default", "draft06", "draft-06", "x-ratelimit", "xratelimit", "none",
		"ietf, x-ratelimit", "IETF|Draft-06|X-RateLimit", " none , ietf ", "",
		",", "ietf,", "|ietf", "ietf,,draft06", "draft-07", "\xff", "ietf\x00", "none|none",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := headers.ParseMode(s)
		var u headers.Mode
		uerr := u.UnmarshalText([]byte(s))
		if (err == nil) != (uerr == nil) || u != m {
			t.Fatalf("ParseMode(%q) = %v, %v but UnmarshalText gives %v, %v", s, m, err, u, uerr)
		}
		if err != nil {
			if m != headers.None || !strings.HasPrefix(err.Error(), "sluice/headers: ") {
				t.Errorf("ParseMode(%q) = %v, %v: want None and a prefixed error", s, m, err)
			}
			return
		}
		text, err := m.MarshalText()
		if err != nil {
			t.Fatalf("ParseMode(%q) = %v, which does not marshal: %v", s, m, err)
		}
		if back, err := headers.ParseMode(string(text)); err != nil || back != m {
			t.Errorf("ParseMode(%q) = %v; its text %q parses to %v, %v", s, m, text, back, err)
		}
	})
}
