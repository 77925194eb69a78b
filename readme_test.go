package sluice_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// marker is the line before a Go block in README.md or docs/*.md that names
// the file the block shows: in full ("file") or in part ("excerpt").
var marker = regexp.MustCompile(`^<!-- (file|excerpt): (\S+\.go) -->$`)

// readmeBlock is one fenced Go block of a Markdown file.
type readmeBlock struct {
	line       int // of the opening fence, 1-based
	kind, path string
	body       []string
}

// goBlocks returns the Go blocks of a Markdown document, each with the marker
// of the line before its fence (blank lines skipped), or an error naming a
// block without one.
func goBlocks(md string) ([]readmeBlock, error) {
	lines := strings.Split(md, "\n")
	var blocks []readmeBlock
	for i := 0; i < len(lines); i++ {
		fence := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(fence, "```") {
			continue
		}
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		if fence == "```go" {
			prev := i - 1
			for prev >= 0 && strings.TrimSpace(lines[prev]) == "" {
				prev--
			}
			var m []string
			if prev >= 0 {
				m = marker.FindStringSubmatch(strings.TrimSpace(lines[prev]))
			}
			if m == nil {
				return nil, fmt.Errorf("line %d: a go block without <!-- file: PATH --> or <!-- excerpt: PATH --> before it", i+1)
			}
			blocks = append(blocks, readmeBlock{line: i + 1, kind: m[1], path: m[2], body: lines[i+1 : min(end, len(lines))]})
		}
		i = end
	}
	return blocks, nil
}

// dedent removes the indentation common to the non-blank lines.
func dedent(lines []string) []string {
	prefix, first := "", true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		ind := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first {
			prefix, first = ind, false
			continue
		}
		for !strings.HasPrefix(ind, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimPrefix(l, prefix)
		if strings.TrimSpace(l) == "" {
			out[i] = ""
		}
	}
	return out
}

// checkBlock reports how b differs from the file it names.
func checkBlock(b readmeBlock, src string) error {
	switch b.kind {
	case "file":
		if got := strings.Join(b.body, "\n") + "\n"; got != src {
			return fmt.Errorf("line %d: the block is not %s as it is; copy the file again", b.line, b.path)
		}
		return nil
	default: // excerpt
		want := strings.Join(dedent(b.body), "\n")
		lines := strings.Split(src, "\n")
		for s := 0; s+len(b.body) <= len(lines); s++ {
			if strings.Join(dedent(lines[s:s+len(b.body)]), "\n") == want {
				return nil
			}
		}
		return fmt.Errorf("line %d: the block's lines are not in %s, one after another", b.line, b.path)
	}
}

// TestREADMEGoBlocks keeps README.md and the guides in docs/ true: every Go
// block shows a file that compiles (go vet ./... builds it), whole or an
// excerpt of it. README.md must have some; a guide may have none.
func TestREADMEGoBlocks(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append([]string{"README.md"}, docs...) {
		md, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := goBlocks(string(md))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(blocks) == 0 && name == "README.md" {
			t.Fatal("README.md: no go blocks found")
		}
		for _, b := range blocks {
			src, err := os.ReadFile(filepath.FromSlash(b.path))
			if err != nil {
				t.Errorf("%s: line %d: %v", name, b.line, err)
				continue
			}
			if err := checkBlock(b, string(src)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}

func TestREADMECheckFindsDrift(t *testing.T) {
	const src = "package main\n\nfunc main() {\n\tif ok {\n\t\trun()\n\t}\n}\n"
	cases := []struct {
		name, md string
		ok       bool
	}{
		{"whole file", "<!-- file: x.go -->\n```go\npackage main\n\nfunc main() {\n\tif ok {\n\t\trun()\n\t}\n}\n```\n", true},
		{"file drifted", "<!-- file: x.go -->\n```go\npackage main\n\nfunc main() {\n\tif ok {\n\t\trun(1)\n\t}\n}\n```\n", false},
		{"file cut short", "<!-- file: x.go -->\n```go\npackage main\n```\n", false},
		{"excerpt dedented", "<!-- excerpt: x.go -->\n\n```go\nif ok {\n\trun()\n}\n```\n", true},
		{"excerpt drifted", "<!-- excerpt: x.go -->\n```go\nif ok {\n\trun(2)\n}\n```\n", false},
		{"excerpt not contiguous", "<!-- excerpt: x.go -->\n```go\nfunc main() {\n\t\trun()\n```\n", false},
		{"excerpt indentation changed inside", "<!-- excerpt: x.go -->\n```go\nif ok {\nrun()\n}\n```\n", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			blocks, err := goBlocks(tc.md)
			if err != nil || len(blocks) != 1 {
				t.Fatalf("goBlocks = %d blocks, %v", len(blocks), err)
			}
			if err := checkBlock(blocks[0], src); (err == nil) != tc.ok {
				t.Fatalf("checkBlock = %v, want ok %v", err, tc.ok)
			}
		})
	}
	for _, md := range []string{
		"```go\npackage main\n```\n",
		"text\n```go\npackage main\n```\n",
		"<!-- file: x.go -->\ntext\n```go\npackage main\n```\n",
	} {
		if _, err := goBlocks(md); err == nil {
			t.Errorf("goBlocks(%q): no error for a block without a marker", md)
		}
	}
	if blocks, err := goBlocks("```sh\ngo run .\n```\n"); err != nil || len(blocks) != 0 {
		t.Errorf("a sh block: %d blocks, %v", len(blocks), err)
	}
}
