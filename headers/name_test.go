package headers_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/headers"
)

func TestSanitizeName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"default", "default"},
		{`quo"te\slash`, `quo"te\slash`}, // escaping is the serialiser's job
		{" ~", " ~"},
		{"tab\there", "tab?here"},
		{"nl\r\n", "nl??"},
		{"del\x7f", "del?"},
		{"nul\x00", "nul?"},
		{"café", "caf?"},
		{"日本", "??"},
		{"emoji😀", "emoji?"},
		{"bad\xff\xfe", "bad??"},
		{"trunc\xe6\x97", "trunc??"}, // a cut-off rune: one '?' per byte
		{"\ufffd", "?"},
		{strings.Repeat("x", maxNameLen), strings.Repeat("x", maxNameLen)},
		{strings.Repeat("x", maxNameLen+1), strings.Repeat("x", maxNameLen)},
		{strings.Repeat("é", 100), strings.Repeat("?", maxNameLen)},
	} {
		if got := headers.SanitizeName(tc.in); got != tc.want {
			t.Errorf("SanitizeName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
