package keyfunc_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/keyfunc"
)

func constKey(s string) keyfunc.Key {
	return keyfunc.New("const", func(*http.Request) (string, error) { return s, nil })
}

func mustJoin(t testing.TB, parts ...string) string {
	t.Helper()
	fns := make([]keyfunc.Key, len(parts))
	for i, p := range parts {
		fns[i] = constKey(p)
	}
	k, err := keyfunc.Join(fns...).Identity(newReq("192.0.2.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestJoinEncoding(t *testing.T) {
	cases := []struct {
		parts []string
		want  string
	}{
		{[]string{"a"}, "1:a,"},
		{[]string{"a:b", "c"}, "3:a:b,1:c,"},
		{[]string{"a", "b:c"}, "1:a,3:b:c,"},
		{[]string{"192.0.2.1", "GET /users/{id}"}, "9:192.0.2.1,15:GET /users/{id},"},
		{[]string{"ü", ","}, "2:ü,1:,,"},
	}
	for _, tc := range cases {
		if got := mustJoin(t, tc.parts...); got != tc.want {
			t.Errorf("Join%q = %q, want %q", tc.parts, got, tc.want)
		}
	}
}

func TestJoinUnambiguous(t *testing.T) {
	// Pairs of part lists that a separator-based join would confuse.
	pairs := [][2][]string{
		{{"a:b", "c"}, {"a", "b:c"}},
		{{"a,b", "c"}, {"a", "b,c"}},
		{{"1:a,", "b"}, {"1:a", ",b"}},
		{{"ab"}, {"a", "b"}},
		{{"1:a,1:b,"}, {"a", "b"}},
		{{"x", "y", "z"}, {"x", "y:z"}},
		{{"2:ab,"}, {"ab"}},
	}
	for _, p := range pairs {
		a, b := mustJoin(t, p[0]...), mustJoin(t, p[1]...)
		if a == b {
			t.Errorf("Join%q == Join%q == %q", p[0], p[1], a)
		}
	}
}

func TestJoinErrors(t *testing.T) {
	boom := errors.New("boom")
	failing := func(*http.Request) (string, error) { return "", boom }
	r := newReq("@") // no peer IP
	cases := []struct {
		name    string
		fns     []keyfunc.Key
		wantErr error
	}{
		{"own_error", []keyfunc.Key{constKey("a"), keyfunc.ClientIP()}, keyfunc.ErrNoKey},
		{"foreign_error", []keyfunc.Key{keyfunc.New("failing", failing), constKey("b")}, boom},
		{"empty_part_is_missing", []keyfunc.Key{constKey("a"), constKey("")}, keyfunc.ErrMissing},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fn := keyfunc.Join(tc.fns...)
			k, err := fn.Identity(r)
			wantNoKey(t, err)
			if k != "" || !errors.Is(err, tc.wantErr) {
				t.Fatalf("got %q, %v; want no key and %v", k, err, tc.wantErr)
			}
		})
	}
	wantPanic(t, "Join()", func() { keyfunc.Join() })
	wantPanic(t, "Join with a zero part", func() { keyfunc.Join(constKey("a"), keyfunc.Key{}) })
	// The caller may reuse its slice after Join.
	fns := []keyfunc.Key{constKey("a")}
	fn := keyfunc.Join(fns...)
	fns[0] = constKey("changed")
	if got := keyOf(t, fn, r); got != "1:a," {
		t.Fatalf("Join kept a reference to the caller's slice: %q", got)
	}
}

// TestJoinParts: a joined key reports its parts in order, whatever their
// kinds hold; a whole key has none; changing the returned slice changes
// nothing.
func TestJoinParts(t *testing.T) {
	header, api, ip := keyfunc.Header("X_Tenant_Id"), keyfunc.APIKey("X-Api-Key"), keyfunc.ClientIP()
	j := keyfunc.Join(header, api, ip).Required()
	if got := j.Kind(); got != header.Kind()+"_api_key_ip" {
		t.Fatalf("Kind = %q", got)
	}
	parts := j.Parts()
	var kinds []string
	for _, p := range parts {
		kinds = append(kinds, p.Kind())
	}
	if want := []string{header.Kind(), "api_key", "ip"}; !slices.Equal(kinds, want) || !strings.Contains(header.Kind(), "_") {
		t.Fatalf("part kinds %q, want %q", kinds, want)
	}
	parts[0] = keyfunc.Global()
	if got := j.Parts()[0].Kind(); got != header.Kind() {
		t.Errorf("the parts changed through the returned slice: %q", got)
	}
	if p := api.Parts(); p != nil {
		t.Errorf("a whole key has parts: %d", len(p))
	}
}
