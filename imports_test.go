package sluice_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportDirection enforces DESIGN.md's import rules on non-test code:
// the root imports the standard library only, keyfunc the standard library
// and internal/ident, which imports the standard library only, only store/redisstore (its
// internal packages, and the test helpers under internal/redistest) imports go-redis, stores import no HTTP-facing package, rules leaves the file
// format to rules/rulefile, and nothing imports middleware, rules/rulefile
// or the examples.
func TestImportDirection(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Imports ","}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const mod = "github.com/sluicehq/sluice"
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, "|")
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, mod), "/")
		for _, imp := range strings.Split(imports, ",") {
			if imp == "" {
				continue
			}
			external := strings.Contains(strings.Split(imp, "/")[0], ".")
			switch {
			case rel == "" && external:
				t.Errorf("the root package imports %s: it must use the standard library only", imp)
			case strings.HasPrefix(imp, "github.com/redis/go-redis") && rel != "store/redisstore" && !strings.HasPrefix(rel, "store/redisstore/internal/") && !strings.HasPrefix(rel, "examples/") && !strings.HasPrefix(rel, "internal/redistest/"):
				t.Errorf("%s imports go-redis: only store/redisstore (and its internal packages) may", pkg)
			case imp == mod+"/middleware" && !strings.HasPrefix(rel, "examples/"):
				t.Errorf("%s imports middleware: nothing but the examples may", pkg)
			case strings.HasPrefix(imp, mod+"/examples"):
				t.Errorf("%s imports an example", pkg)
			case strings.HasPrefix(rel, "store/") && rel != "store/storetest" && (strings.HasPrefix(imp, mod+"/keyfunc") || strings.HasPrefix(imp, mod+"/rules") || strings.HasPrefix(imp, mod+"/headers")):
				t.Errorf("%s imports %s: stores depend on the root only", pkg, imp)
			case rel == "keyfunc" && external && imp != mod+"/internal/ident":
				t.Errorf("keyfunc imports %s: it must use the standard library only", imp)
			case rel == "internal/ident" && external:
				t.Errorf("internal/ident imports %s: it must use the standard library only", imp)
			case rel == "rules" && external && !strings.HasPrefix(imp, mod):
				t.Errorf("rules imports %s: the rule-file format, and its YAML parser, belong to rules/rulefile", imp)
			case imp == mod+"/rules/rulefile" && !strings.HasPrefix(rel, "examples/"):
				t.Errorf("%s imports rules/rulefile: only applications read rule files", pkg)
			}
		}
	}
}
