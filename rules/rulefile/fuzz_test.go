package rulefile_test

import (
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/rulefile"
)

// FuzzLoad feeds arbitrary files to the loader: it never panics, every
// error is a *FileError naming the file (and the rule, inside one), the
// same input always gives the same answer, and a Set it returns resolves
// requests.
func FuzzLoad(f *testing.F) {
	for _, dir := range []string{"../../testdata/rulefiles/valid", "../../testdata/rulefiles/invalid"} {
		for _, pattern := range []string{"*.yaml", "*.json"} {
			files, _ := filepath.Glob(filepath.Join(dir, pattern))
			for _, path := range files {
				data, err := os.ReadFile(path)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(data, strings.HasSuffix(path, ".json"))
			}
		}
	}
	cfg := testConfig()
	f.Fuzz(func(t *testing.T, data []byte, json bool) {
		name := "fuzz.yaml"
		if json {
			name = "fuzz.json"
		}
		set, err := rulefile.Parse(name, data, cfg)
		_, again := rulefile.Parse(name, data, cfg)
		if (err == nil) != (again == nil) || err != nil && err.Error() != again.Error() {
			t.Fatalf("two parses disagree: %v / %v", err, again)
		}
		if err != nil {
			var fe *rulefile.FileError
			if !errors.As(err, &fe) || fe.File != name || !errors.Is(err, rulefile.ErrInvalidFile) {
				t.Fatalf("not a *FileError for %s: %v", name, err)
			}
			if !strings.HasPrefix(err.Error(), "rulefile: "+name) {
				t.Fatalf("the error does not name the file first: %v", err)
			}
			if fe.Rule != "" && !strings.Contains(err.Error(), strconv.Quote(fe.Rule)) {
				t.Fatalf("the error does not name rule %q: %v", fe.Rule, err)
			}
			return
		}
		if set.Len() == 0 {
			t.Fatal("an empty set was accepted")
		}
		r := httptest.NewRequest("GET", "/items/1", nil)
		r.Header.Set("X-API-Key", "k")
		r.Header.Set("X-Plan", "pro")
		r.Header.Set("X-Tenant", "t")
		var m rules.Matched
		if err := set.Resolve(withUser(r, "alice"), &m); err != nil && !strings.HasPrefix(err.Error(), "rules: rule ") {
			t.Fatalf("Resolve: %v", err)
		}
	})
}
