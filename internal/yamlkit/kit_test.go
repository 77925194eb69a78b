package yamlkit

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// testError is what the tests' FailFunc makes.
type testError struct {
	line  int
	field string
	err   error
}

func (e *testError) Error() string { return Message("test", "f.yaml", e.line, "", e.field, e.err) }

func newTestReader() *Reader {
	return NewReader(func(line int, field string, err error) error { return &testError{line, field, err} })
}

// root parses a one-document YAML text and returns its top node.
func root(t testing.TB, text string) *yaml.Node {
	t.Helper()
	doc, err := NewDocuments([]byte(text)).Next()
	if err != nil {
		t.Fatalf("parse %q: %v", text, err)
	}
	return doc.Content[0]
}

func TestHelpers(t *testing.T) {
	long := strings.Repeat("x", 70)
	for _, tc := range []struct{ got, want string }{
		{Sub("", "a"), "a"},
		{Sub("a", "b"), "a.b"},
		{Elem("a.b", 3), "a.b[3]"},
		{Quote("hi"), `"hi"`},
		{Quote("a\nb"), `"a\nb"`},
		{Quote(long), `"` + long[:MaxQuoted] + `"...`},
		{Describe(root(t, "{}")), "a mapping"},
		{Describe(root(t, "[]")), "a list"},
		{Describe(root(t, "~")), "null"},
		{Describe(root(t, "1.5")), "a number"},
		{Describe(root(t, "true")), "a boolean"},
		{Describe(root(t, "x")), "a string"},
		{Describe(&yaml.Node{Kind: yaml.AliasNode}), "an alias"},
		{Deref(root(t, "a: &x 1\nb: *x\n").Content[3]).Value, "1"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
}

func TestMessage(t *testing.T) {
	cause := errors.New("wrong")
	for _, tc := range []struct {
		line         int
		scope, field string
		err          error
		want         string
	}{
		{0, "", "", cause, "p: f.yaml: wrong"},
		{3, "", "", cause, "p: f.yaml:3: wrong"},
		{3, `rule "r"`, "limit.rate", cause, `p: f.yaml:3: rule "r": limit.rate: wrong`},
		{3, "", "limit", nil, "p: f.yaml:3: limit"},
	} {
		if got := Message("p", "f.yaml", tc.line, tc.scope, tc.field, tc.err); got != tc.want {
			t.Errorf("Message = %q, want %q", got, tc.want)
		}
	}
}

// TestMapping: a mapping's fields are known, plain and given once; an
// unknown one is named with a suggestion, unless it is long.
func TestMapping(t *testing.T) {
	secret := "sk_live_0123456789abcdefghijklmnop"
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"fine", "rate: 1\nper: 1s\n", ""},
		{"alias value", "rate: &a 1\nper: *a\n", ""},
		{"not a mapping", "- a\n", "f.yaml:1: limit: must be a mapping (name: value), not a list"},
		{"null key", "~: 1\n", "f.yaml:1: limit: a field name must be a plain string, not null"},
		{"list key", "? [a]\n: 1\n", "f.yaml:1: limit: a field name must be a plain string, not a list"},
		{"merge key", "<<: {rate: 1}\n", "f.yaml:1: limit: merge keys (<<) are not supported; use defaults"},
		{"misspelt", "rate: 1\nbrust: 2\n", `f.yaml:2: limit: unknown field "brust" (did you mean "burst"?)`},
		{"far off", "colour: red\n", `f.yaml:1: limit: unknown field "colour" (known: rate, per, burst)`},
		{"long name", secret + ": 1\n", "f.yaml:1: limit: unknown field (a 34-byte name, not shown)"},
		{"twice", "rate: 1\nrate: 2\n", "f.yaml:2: limit.rate: set twice (first at line 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := newTestReader().Mapping(root(t, tc.doc), "limit", "rate", "per", "burst")
			if tc.want == "" {
				if err != nil || len(f) != 2 {
					t.Fatalf("Mapping = %v, %v", f, err)
				}
				return
			}
			if err == nil || !strings.HasSuffix(err.Error(), tc.want) && !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret[:MaxFieldName]) {
				t.Fatalf("the error repeats a long unknown name: %v", err)
			}
		})
	}
}

// TestScalars: each reader takes what it names and refuses the rest,
// saying what it found.
func TestScalars(t *testing.T) {
	upper := func(s string) (string, error) {
		if s == "" {
			return "", errors.New("empty")
		}
		return strings.ToUpper(s), nil
	}
	for _, tc := range []struct {
		name string
		read func(r *Reader, n *yaml.Node) (any, error)
		doc  string
		want any // a value, or the error's ending
	}{
		{"str", func(r *Reader, n *yaml.Node) (any, error) { return r.Str(n, "v") }, "abc", "abc"},
		{"str number", func(r *Reader, n *yaml.Node) (any, error) { return r.Str(n, "v") }, "12", "12"},
		{"str null", func(r *Reader, n *yaml.Node) (any, error) { return r.Str(n, "v") }, "~", "v: must be a string, not null"},
		{"str list", func(r *Reader, n *yaml.Node) (any, error) { return r.Str(n, "v") }, "[a]", "v: must be a string, not a list"},
		{"str or null", func(r *Reader, n *yaml.Node) (any, error) { return r.StrOrNull(n, "v") }, "~", ""},
		{"str or null map", func(r *Reader, n *yaml.Node) (any, error) { return r.StrOrNull(n, "v") }, "{}", "v: must be a string, not a mapping"},
		{"integer", func(r *Reader, n *yaml.Node) (any, error) { return r.Integer(n, "v") }, "-42", int64(-42)},
		{"integer float", func(r *Reader, n *yaml.Node) (any, error) { return r.Integer(n, "v") }, "1.5", `v: "1.5" is not a whole number`},
		{"integer string", func(r *Reader, n *yaml.Node) (any, error) { return r.Integer(n, "v") }, "'1'", "v: must be a whole number, not a string"},
		{"integer huge", func(r *Reader, n *yaml.Node) (any, error) { return r.Integer(n, "v") }, "!!int 99999999999999999999", `v: "99999999999999999999" is out of range`},
		{"integer in", func(r *Reader, n *yaml.Node) (any, error) { return r.IntegerIn(n, "v", 0, 10) }, "10", int64(10)},
		{"integer above", func(r *Reader, n *yaml.Node) (any, error) { return r.IntegerIn(n, "v", 0, 10) }, "11", `v: "11" is out of range (0 to 10)`},
		{"integer below", func(r *Reader, n *yaml.Node) (any, error) { return r.IntegerIn(n, "v", 0, 10) }, "-1", `v: "-1" is out of range (0 to 10)`},
		{"boolean", func(r *Reader, n *yaml.Node) (any, error) { return r.Boolean(n, "v") }, "false", false},
		{"boolean word", func(r *Reader, n *yaml.Node) (any, error) { return r.Boolean(n, "v") }, "yes", "v: must be true or false, not a string"},
		{"boolean tagged", func(r *Reader, n *yaml.Node) (any, error) { return r.Boolean(n, "v") }, "!!bool maybe", "v: must be true or false"},
		{"strings", func(r *Reader, n *yaml.Node) (any, error) { return r.Strings(n, "v", false, upper) }, "[a, b]", "[A B]"},
		{"strings scalar", func(r *Reader, n *yaml.Node) (any, error) { return r.Strings(n, "v", true, upper) }, "a", "[A]"},
		{"strings scalar refused", func(r *Reader, n *yaml.Node) (any, error) { return r.Strings(n, "v", false, upper) }, "a", "v: must be a list, not a string"},
		{"strings empty", func(r *Reader, n *yaml.Node) (any, error) { return r.Strings(n, "v", false, upper) }, "[]", "v: empty list: leave the field out instead"},
		{"strings check", func(r *Reader, n *yaml.Node) (any, error) { return r.Strings(n, "v", false, upper) }, "[a, '']", "v[1]: empty"},
		{"strings element", func(r *Reader, n *yaml.Node) (any, error) { return r.Strings(n, "v", false, upper) }, "[a, [b]]", "v[1]: must be a string, not a list"},
		{"sequence", func(r *Reader, n *yaml.Node) (any, error) {
			s, err := r.Sequence(n, "v", "a list of rules")
			if err != nil {
				return nil, err
			}
			return len(s.Content), nil
		}, "[1, 2]", 2},
		{"sequence refused", func(r *Reader, n *yaml.Node) (any, error) { return r.Sequence(n, "v", "a list of rules") }, "a", "v: must be a list of rules, not a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.read(newTestReader(), root(t, tc.doc))
			if want, isErr := tc.want.(string); isErr && (err != nil || got == nil) {
				if err == nil || !strings.HasSuffix(err.Error(), want) {
					t.Fatalf("error %v, want it to end %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestBudget: a few aliases that stand for millions of values stop at
// MaxNodes, with an error; a plain document of the same values passes.
func TestBudget(t *testing.T) {
	// Ten levels of ten aliases each: 10^10 lists, aliases expanded.
	var b strings.Builder
	b.WriteString("l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	r := newTestReader()
	var walk func(n *yaml.Node, path string) error
	walk = func(n *yaml.Node, path string) error {
		seq, err := r.Sequence(n, path, "a list")
		if err != nil {
			return err
		}
		for i, item := range seq.Content {
			if Deref(item).Kind == yaml.SequenceNode {
				if err := walk(item, Elem(path, i)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	doc := root(t, b.String())
	err := walk(doc.Content[len(doc.Content)-1], "l10")
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("too large (more than %d values, aliases expanded)", MaxNodes)) {
		t.Fatalf("walk = %v, want the budget's error", err)
	}
	if err := r.Visit(doc, "again"); err == nil {
		t.Fatal("a spent budget let a value through")
	}
	r = newTestReader()
	if err := walk(root(t, "["+strings.Repeat("[x, x], ", 1000)+"]"), "plain"); err != nil {
		t.Fatalf("a plain document: %v", err)
	}
}

// TestDocuments: documents come one at a time; a syntax error names its
// line and stays.
func TestDocuments(t *testing.T) {
	docs := NewDocuments([]byte("a: 1\n---\n---\nb: 2\n"))
	var got []string
	for {
		doc, err := docs.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
			got = append(got, "empty")
			continue
		}
		got = append(got, doc.Content[0].Content[0].Value)
	}
	if strings.Join(got, ",") != "a,empty,b" {
		t.Errorf("documents %v", got)
	}

	docs = NewDocuments([]byte("a: 1\nb: [\n"))
	_, err := docs.Next()
	se, ok := errors.AsType[*SyntaxError](err)
	if !ok || se.Line != 2 || !strings.HasPrefix(se.Error(), "invalid YAML: ") {
		t.Fatalf("Next = %#v, want a *SyntaxError at line 2", err)
	}
	if _, again := docs.Next(); again != err {
		t.Fatalf("after an error Next = %v", again)
	}
	if _, err := NewDocuments(nil).Next(); err != io.EOF {
		t.Fatalf("no data: %v", err)
	}
}

func TestInput(t *testing.T) {
	got, err := Input([]byte("\xef\xbb\xbfa: 1"), 10)
	if err != nil || string(got) != "a: 1" {
		t.Errorf("Input = %q, %v", got, err)
	}
	if _, err := Input([]byte("12345678901"), 10); err == nil || err.Error() != "larger than 10 bytes" {
		t.Errorf("too large: %v", err)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadFile(p, 10); err != nil || string(data) != "0123456789" {
		t.Errorf("ReadFile = %q, %v", data, err)
	}
	if _, err := ReadFile(p, 9); err == nil || err.Error() != "larger than 9 bytes" {
		t.Errorf("too large: %v", err)
	}
	_, err := ReadFile(filepath.Join(dir, "missing.yaml"), 10)
	if err == nil || !errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), dir) || !strings.HasPrefix(err.Error(), "open: ") {
		t.Errorf("missing: %v", err)
	}
}
