// Package quickstart holds the shortest complete programs for the common
// cases, kept compiling by go vet ./... and kept short by this test.
package quickstart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lines counts a Go file's lines that are neither blank, nor comments, nor
// part of the import block: what a user types beyond the imports.
func lines(src string) int {
	n, inImport := 0, false
	for _, l := range strings.Split(src, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case inImport:
			inImport = l != ")"
		case l == "import (":
			inImport = true
		case l == "", strings.HasPrefix(l, "//"), strings.HasPrefix(l, "import "):
		default:
			n++
		}
	}
	return n
}

func TestLines(t *testing.T) {
	cases := []struct {
		file string
		max  int // the shortest peer's count plus 2
	}{
		{"nethttp/main.go", 10},  // per-IP on a ServeMux with Redis; httprate: 8
		{"chi/main.go", 19},      // chi, a login rule and a per-API-key rule; httprate: 17
		{"httprate/main.go", 17}, // the same with the one-liners, login per account and per IP; httprate: 17
		{"limiter/main.go", 26},  // a job limited per tenant without HTTP; redis_rate: 24
	}
	for _, tc := range cases {
		src, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		n := lines(string(src))
		t.Logf("%s: %d lines", tc.file, n)
		if n > tc.max {
			t.Errorf("%s: %d lines, want at most %d", tc.file, n, tc.max)
		}
	}
}

func TestLinesCountsWhatUsersType(t *testing.T) {
	src := "// doc\npackage main\n\nimport (\n\t\"fmt\"\n)\n\nimport \"os\"\n\nfunc main() {\n\t// why\n\tfmt.Println(os.Args)\n}\n"
	if got := lines(src); got != 4 {
		t.Fatalf("lines = %d, want 4 (package, func, call, brace)", got)
	}
}

// Every quickstart on Redis builds its client with redisstore's
// constructors, which set what the store needs for each topology: none
// builds one with go-redis's own, which would need the settings spelled
// out (and warns at start when one is missing).
func TestQuickstartsBuildClientsWithRedisstore(t *testing.T) {
	files, err := filepath.Glob("*/main.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no quickstarts: %v", err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(src)
		if !strings.Contains(s, "redisstore.") {
			continue // not on Redis
		}
		if strings.Contains(s, "redis.New") || strings.Contains(s, `"github.com/redis/go-redis/v9"`) {
			t.Errorf("%s builds its Redis client with go-redis; use redisstore.NewClient (or NewClusterClient, NewFailoverClient)", f)
		}
		if !strings.Contains(s, "NewClient(") && !strings.Contains(s, "NewClusterClient(") && !strings.Contains(s, "NewFailoverClient(") {
			t.Errorf("%s uses a Redis store without a redisstore client constructor", f)
		}
	}
}
