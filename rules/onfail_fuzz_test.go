package rules_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/rules"
)

// FuzzParseOnFail: any input gives an error or a policy, never a panic; a
// policy is parsed only from its own name, which it prints.
func FuzzParseOnFail(f *testing.F) {
	for _, s := range []string{"open", "closed", "local", "", "Open", " open", "close", "OnFail(3)", "open\x00", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := rules.ParseOnFail(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "rules: ") {
				t.Errorf("ParseOnFail(%q): error without the package prefix: %v", s, err)
			}
			return
		}
		if p.String() != s {
			t.Errorf("ParseOnFail(%q) = %v, whose name is not the input", s, p)
		}
	})
}
