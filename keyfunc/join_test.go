package keyfunc_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/go-chi/httprate"

	"github.com/sluicehq/sluice/keyfunc"
)

func constKey(s string) keyfunc.KeyFunc { return httprate.Key(s) }

func mustJoin(t testing.TB, parts ...string) string {
	t.Helper()
	fns := make([]keyfunc.KeyFunc, len(parts))
	for i, p := range parts {
		fns[i] = constKey(p)
	}
	fn, err := keyfunc.Join(fns...)
	if err != nil {
		t.Fatal(err)
	}
	k, err := fn(newReq("192.0.2.1:1"))
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
	// Compare with httprate.JoinKeys, which is ambiguous.
	r := newReq("192.0.2.1:1")
	x, _ := httprate.JoinKeys(constKey("a:b"), constKey("c"))(r)
	y, _ := httprate.JoinKeys(constKey("a"), constKey("b:c"))(r)
	if x != y {
		t.Logf("note: httprate.JoinKeys is no longer ambiguous (%q vs %q)", x, y)
	}
}

func TestJoinErrors(t *testing.T) {
	boom := errors.New("boom")
	failing := func(*http.Request) (string, error) { return "", boom }
	r := newReq("@") // no peer IP
	cases := []struct {
		name    string
		fns     []keyfunc.KeyFunc
		wantErr error
	}{
		{"own_error", []keyfunc.KeyFunc{constKey("a"), keyfunc.ClientIP()}, keyfunc.ErrNoKey},
		{"foreign_error", []keyfunc.KeyFunc{failing, constKey("b")}, boom},
		{"empty_part", []keyfunc.KeyFunc{constKey("a"), constKey("")}, keyfunc.ErrNoKey},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fn := keyfunc.Must(keyfunc.Join(tc.fns...))
			k, err := fn(r)
			wantNoKey(t, err)
			if k != "" || !errors.Is(err, tc.wantErr) {
				t.Fatalf("got %q, %v; want no key and %v", k, err, tc.wantErr)
			}
		})
	}
	if _, err := keyfunc.Join(); err == nil {
		t.Error("Join() accepted")
	}
	if _, err := keyfunc.Join(constKey("a"), nil); err == nil {
		t.Error("Join with a nil part accepted")
	}
	// The caller may reuse its slice after Join.
	fns := []keyfunc.KeyFunc{constKey("a")}
	fn := keyfunc.Must(keyfunc.Join(fns...))
	fns[0] = constKey("changed")
	if got := keyOf(t, fn, r); got != "1:a," {
		t.Fatalf("Join kept a reference to the caller's slice: %q", got)
	}
}
