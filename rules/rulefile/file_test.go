package rulefile_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/rulefile"
)

var update = flag.Bool("update", false, "rewrite the expected .want and .err files of testdata")

type userKey struct{}

// withUser returns r signed in as user.
func withUser(r *http.Request, user string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), userKey{}, user))
}

func userFrom(ctx context.Context) (string, bool) {
	u, ok := ctx.Value(userKey{}).(string)
	return u, ok
}

// testConfig serves every valid file: users from the context, the plan
// from X-Plan, and a custom "tenant" key from X-Tenant.
func testConfig() rulefile.LoadConfig {
	return rulefile.LoadConfig{
		User: userFrom,
		Plan: func(r *http.Request) string { return r.Header.Get("X-Plan") },
		Keys: map[string]keyfunc.Key{"tenant": keyfunc.Header("X-Tenant")},
	}
}

// describe summarises a set, one line per rule and bypass entry.
func describe(s *rules.Set) string {
	var b strings.Builder
	for _, r := range s.Rules() {
		fmt.Fprintf(&b, "rule %s: key=%s limit=%v algorithm=%v cost=%d max_cost=%d on_fail=%v shadow=%v hidden=%v match=%v\n",
			r.Name, r.Key.Kind(), r.Limit, r.Algorithm, r.Cost, r.MaxCost, r.OnFail, r.Shadow, r.Hidden, r.Match != nil)
		if r.Count != nil {
			fmt.Fprintf(&b, "  count %v\n", r.Count)
		}
		if c := r.Concurrency; c != nil {
			fmt.Fprintf(&b, "  concurrency max=%d hold=%v\n", c.Max, c.Hold)
		}
		if p := r.Penalty; p != nil {
			fmt.Fprintf(&b, "  penalty block=%v after=%d\n", p.Block, p.After)
		}
		for _, o := range r.Overrides {
			fmt.Fprintf(&b, "  override limit=%v identities=%q\n", o.Limit, o.Identities)
		}
		if r.MaxLimit != (sluice.Limit{}) {
			fmt.Fprintf(&b, "  max_limit=%v\n", r.MaxLimit)
		}
	}
	for _, e := range s.BypassEntries() {
		fmt.Fprintf(&b, "bypass %s\n", e.Name)
	}
	return b.String()
}

// testFiles lists the rule files of dir, without the expectation files.
func testFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.yaml", "*.json"} {
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatalf("no rule files in %s", dir)
	}
	return files
}

// expect compares got with the content of path, or writes it with -update.
func expect(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("got:\n%s\nwant (%s):\n%s", got, path, want)
	}
}

func TestValidFiles(t *testing.T) {
	files := append(testFiles(t, "../../testdata/rulefiles/valid"), "../../examples/gateway/rules.yaml")
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			set, err := rulefile.LoadFile(path, testConfig())
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(path, "/examples/") {
				return // examples/gateway tests it in depth
			}
			expect(t, strings.TrimSuffix(path, filepath.Ext(path))+".want", describe(set))
		})
	}
}

// Each invalid file is refused with exactly the message in its .err file,
// naming the file, the line, the rule and the field.
func TestInvalidFiles(t *testing.T) {
	for _, path := range testFiles(t, "../../testdata/rulefiles/invalid") {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = rulefile.Parse(name, data, testConfig())
			var fe *rulefile.FileError
			if !errors.As(err, &fe) || !errors.Is(err, rulefile.ErrInvalidFile) || fe.File != name {
				t.Fatalf("err = %v, want a *FileError for %s", err, name)
			}
			if fe.Rule != "" && !errors.Is(err, rules.ErrInvalidRule) {
				t.Errorf("an error about rule %q does not wrap ErrInvalidRule", fe.Rule)
			}
			expect(t, strings.TrimSuffix(path, filepath.Ext(path))+".err", err.Error()+"\n")
		})
	}
	// Every expectation has its file.
	errs, _ := filepath.Glob("../../testdata/rulefiles/invalid/*.err")
	for _, e := range errs {
		base := strings.TrimSuffix(e, ".err")
		if _, err1 := os.Stat(base + ".yaml"); err1 != nil {
			if _, err2 := os.Stat(base + ".json"); err2 != nil {
				t.Errorf("%s has no rule file", e)
			}
		}
	}
}

// LoadFile names the path it was given; a missing file is a FileError
// that still says why, for errors.Is.
func TestLoadFileErrors(t *testing.T) {
	_, err := rulefile.LoadFile("../../testdata/rulefiles/invalid/zero_rate.yaml", testConfig())
	if err == nil || !strings.HasPrefix(err.Error(), "rulefile: ../../testdata/rulefiles/invalid/zero_rate.yaml:4: ") {
		t.Errorf("err = %v", err)
	}
	_, err = rulefile.LoadFile("testdata/nope.yaml", testConfig())
	if !errors.Is(err, os.ErrNotExist) || !errors.Is(err, rulefile.ErrInvalidFile) ||
		err.Error() != "rulefile: testdata/nope.yaml: open: no such file or directory" {
		t.Errorf("err = %v", err)
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, make([]byte, rulefile.MaxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err = rulefile.LoadFile(big, testConfig()); err == nil || !strings.Contains(err.Error(), "larger than 1048576 bytes") {
		t.Errorf("err = %v", err)
	}
}

// A byte order mark, as some editors write, is not an error.
func TestByteOrderMark(t *testing.T) {
	for _, name := range []string{"bom.yaml", "bom.json"} {
		src := "rules:\n  - {name: a, key: ip, limit: {rate: 1, per: 1s}}\n"
		if name == "bom.json" {
			src = `{"rules": [{"name": "a", "key": "ip", "limit": {"rate": 1, "per": "1s"}}]}`
		}
		if _, err := rulefile.Parse(name, []byte("\xef\xbb\xbf"+src), rulefile.LoadConfig{}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
