package rulefile_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/rules/rulefile"
)

// TestValueBudget: a file whose aliases stand for more values than the
// reader visits is refused, naming the entry it reached; the same values
// written out fewer times pass.
func TestValueBudget(t *testing.T) {
	file := func(rules int) string {
		var b strings.Builder
		b.WriteString("rules:\n")
		for i := range rules {
			fmt.Fprintf(&b, "  - name: r%d\n    key: ip\n    limit: {rate: 10, per: 1m}\n    match:\n      methods: ", i)
			if i == 0 {
				b.WriteString("&m [" + strings.Repeat("GET, ", 9_999) + "GET]\n")
			} else {
				b.WriteString("*m\n")
			}
		}
		return b.String()
	}
	if _, err := rulefile.Parse("small.yaml", []byte(file(10)), testConfig()); err != nil {
		t.Fatalf("10 rules of 10,000 methods: %v", err)
	}
	_, err := rulefile.Parse("bomb.yaml", []byte(file(30)), testConfig())
	want := `: match.methods: the document is too large (more than 200000 values, aliases expanded)`
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `rule "r19"`) {
		t.Fatalf("30 rules of 10,000 methods: %v, want %q in rule r19", err, want)
	}
}

// TestLongUnknownFieldNotShown: an unknown field with a long name, such as
// an API key pasted as a field, is described by its length only.
func TestLongUnknownFieldNotShown(t *testing.T) {
	secret := "sk_live_4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
	_, err := rulefile.Parse("keys.yaml", []byte("rules:\n  - name: r\n    key: ip\n    limit: {rate: 1, per: 1s}\n    "+secret+": true\n"), testConfig())
	want := `rulefile: keys.yaml:5: rule "r": unknown field (a 40-byte name, not shown)`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}
