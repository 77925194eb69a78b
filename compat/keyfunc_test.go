package compat_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-chi/httprate"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
)

// TestHTTPRateKeyFuncsAssignable proves KeyFunc is an alias: httprate's
// key functions (named type httprate.KeyFunc or plain functions) are
// assignable to it, and ours to theirs.
func TestHTTPRateKeyFuncsAssignable(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/users/1", nil)
	r.RemoteAddr = "192.0.2.1:1234"

	var named httprate.KeyFunc = httprate.KeyByEndpoint
	cases := []struct {
		name string
		fn   keyfunc.KeyFunc
		want string
	}{
		{"KeyByEndpoint", httprate.KeyByEndpoint, "/users/1"},
		//lint:ignore SA1019 deprecated in httprate and still exported: the alias must accept it
		{"KeyByIP", httprate.KeyByIP, "192.0.2.1"},
		//lint:ignore SA1019 deprecated in httprate and still exported: the alias must accept it
		{"KeyByRealIP", httprate.KeyByRealIP, "192.0.2.1"},
		{"Key", httprate.Key("fixed"), "fixed"}, // returns an unnamed func type
		{"named_variable", named, "/users/1"},   // a value of the named type
		{"JoinKeys", httprate.JoinKeys(httprate.KeyByEndpoint, httprate.Key("x")), "/users/1:x:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := keyOf(t, tc.fn, r); got != tc.want {
				t.Fatalf("key = %q, want %q", got, tc.want)
			}
		})
	}

	// And the other way: our keys' functions plug into httprate.
	var back httprate.KeyFunc = keyfunc.ClientIP().Func()
	if got := keyOf(t, back, r); got != "192.0.2.1" {
		t.Fatalf("ClientIP via httprate.KeyFunc = %q", got)
	}
	joined := httprate.JoinKeys(keyfunc.ClientIP().Func(), keyfunc.Global().Func())
	if got := keyOf(t, joined, r); got != "192.0.2.1:global:" {
		t.Fatalf("httprate.JoinKeys of ours = %q", got)
	}
	h := httprate.LimitBy(1, time.Minute, keyfunc.ClientIP().Func())(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for i, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Fatalf("request %d through httprate.LimitBy: status %d, want %d", i+1, w.Code, want)
		}
	}
}

// TestHTTPRateKeyFuncInRule: a key function of httprate's counts in a rule
// once it has a kind.
func TestHTTPRateKeyFuncInRule(t *testing.T) {
	set := rules.MustNew(rules.Rule{Name: "per-path", Key: keyfunc.New("path", httprate.KeyByEndpoint), Limit: sluice.PerMinute(1)})
	var m rules.Matched
	if err := set.Resolve(httptest.NewRequest(http.MethodGet, "/users/1", nil), &m); err != nil {
		t.Fatal(err)
	}
	if want := rules.BucketKey("per-path", "path", "/users/1"); len(m.Hits) != 1 || m.Hits[0].Key != want {
		t.Fatalf("hits %+v, want one keyed %q", m.Hits, want)
	}
}

// TestJoinIsInjectiveWhereHTTPRateIsNot: keyfunc.Join encodes its parts
// as netstrings; httprate.JoinKeys joins them with ':', so two different
// lists of parts can give one key.
func TestJoinIsInjectiveWhereHTTPRateIsNot(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	c := func(s string) keyfunc.KeyFunc { return httprate.Key(s) }
	x, _ := httprate.JoinKeys(c("a:b"), c("c"))(r)
	y, _ := httprate.JoinKeys(c("a"), c("b:c"))(r)
	a, _ := keyfunc.Join(keyfunc.New("p", c("a:b")), keyfunc.New("p", c("c"))).Identity(r)
	b, _ := keyfunc.Join(keyfunc.New("p", c("a")), keyfunc.New("p", c("b:c"))).Identity(r)
	if a == b {
		t.Fatalf("keyfunc.Join gives %q for both lists", a)
	}
	if x != y {
		t.Logf("httprate.JoinKeys now tells the lists apart (%q vs %q)", x, y)
	}
}

func keyOf(t *testing.T, fn keyfunc.KeyFunc, r *http.Request) string {
	t.Helper()
	k, err := fn(r)
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	return k
}
