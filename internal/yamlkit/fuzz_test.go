package yamlkit

import (
	"errors"
	"io"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// fuzzFields are the field names the fuzz walk knows.
var fuzzFields = []string{"name", "rate", "per", "burst", "on", "list", "descriptors"}

// FuzzReader feeds arbitrary files to the kit's entry points (NewDocuments,
// then a Reader over every document): nothing panics, every error is the
// caller's with a line within the input, an unknown field name longer
// than MaxFieldName is never repeated, and no file makes the reader visit
// more than MaxNodes values, aliases expanded.
func FuzzReader(f *testing.F) {
	for _, seed := range []string{
		"name: a\nrate: 1\nper: 1s\n",
		"list: [a, b, c]\ndescriptors:\n  - name: x\n    on: true\n",
		"a: &a [*a]\n",
		"l0: &l0 [x, x, x]\nl1: &l1 [*l0, *l0, *l0]\nlist: [*l1, *l1, *l1]\n",
		"sk_live_0123456789abcdefghijklmnop: 1\n",
		"rate: 1\n---\nper: [\n",
		"<<: {rate: 1}\n",
		"? [a]\n: 1\n",
		"\xef\xbb\xbfname: x\n",
		"{",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		data, err := Input(data, 1<<20)
		if err != nil {
			return
		}
		lines := strings.Count(string(data), "\n") + strings.Count(string(data), "\r") + 2
		long := longKeys(data)
		docs := NewDocuments(data)
		for {
			doc, err := docs.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				se, ok := errors.AsType[*SyntaxError](err)
				if !ok || se.Line < 0 || se.Line > lines || !strings.HasPrefix(se.Error(), "invalid YAML: ") {
					t.Fatalf("Next: %#v", err)
				}
				return
			}
			visits := 0
			r := NewReader(func(line int, field string, err error) error { return &testError{line, field, err} })
			err = fuzzWalk(r, doc, "", 0, &visits)
			if visits > MaxNodes+1 {
				t.Fatalf("%d values visited", visits)
			}
			if err == nil {
				continue
			}
			te, ok := errors.AsType[*testError](err)
			if !ok || te.line < 0 || te.line > lines {
				t.Fatalf("bad error %v", err)
			}
			if strings.Contains(te.err.Error(), "unknown field") {
				for _, k := range long {
					if strings.Contains(err.Error(), k[:MaxFieldName+1]) {
						t.Fatalf("a long unknown name is repeated: %v", err)
					}
				}
			}
		}
	})
}

// fuzzWalk reads n as the kit's callers do: a mapping of fuzzFields, a
// list, or a scalar, each value in turn.
func fuzzWalk(r *Reader, n *yaml.Node, path string, depth int, visits *int) error {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	if depth > 64 {
		return nil
	}
	*visits++
	switch Deref(n).Kind {
	case yaml.MappingNode:
		f, err := r.Mapping(n, path, fuzzFields...)
		if err != nil {
			return err
		}
		for _, name := range fuzzFields {
			if v, ok := f[name]; ok {
				if err := fuzzWalk(r, v, Sub(path, name), depth+1, visits); err != nil {
					return err
				}
			}
		}
	case yaml.SequenceNode:
		seq, err := r.Sequence(n, path, "a list")
		if err != nil {
			return err
		}
		for i, item := range seq.Content {
			if err := fuzzWalk(r, item, Elem(path, i), depth+1, visits); err != nil {
				return err
			}
		}
	default:
		if _, err := r.Str(n, path); err != nil {
			if _, err := r.Integer(n, path); err != nil {
				_, err = r.Boolean(n, path)
				return err
			}
		}
	}
	return nil
}

// longKeys returns the words of data longer than MaxFieldName bytes: the
// candidates for a long field name.
func longKeys(data []byte) []string {
	var out []string
	for _, w := range strings.FieldsFunc(string(data), func(r rune) bool {
		return strings.ContainsRune(" \t\r\n:{}[],&*!|>'\"#?-", r)
	}) {
		if len(w) > MaxFieldName {
			out = append(out, w)
		}
	}
	return out
}
