package keyfunc_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/httprate"

	"github.com/sluicehq/sluice/keyfunc"
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
		{"KeyByIP", httprate.KeyByIP, "192.0.2.1"},         //nolint:staticcheck // deprecated, still exported
		{"KeyByRealIP", httprate.KeyByRealIP, "192.0.2.1"}, //nolint:staticcheck // deprecated, still exported
		{"Key", httprate.Key("fixed"), "fixed"},            // returns an unnamed func type
		{"named_variable", named, "/users/1"},              // a value of the named type
		{"JoinKeys", httprate.JoinKeys(httprate.KeyByEndpoint, httprate.Key("x")), "/users/1:x:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := keyOf(t, tc.fn, r); got != tc.want {
				t.Fatalf("key = %q, want %q", got, tc.want)
			}
		})
	}

	// And the other way: our KeyFuncs plug into httprate.
	var back httprate.KeyFunc = keyfunc.ClientIP()
	if got := keyOf(t, back, r); got != "192.0.2.1" {
		t.Fatalf("ClientIP via httprate.KeyFunc = %q", got)
	}
	joined := httprate.JoinKeys(keyfunc.ClientIP(), keyfunc.Global())
	if got := keyOf(t, joined, r); got != "192.0.2.1:global:" {
		t.Fatalf("httprate.JoinKeys of ours = %q", got)
	}
	h := httprate.LimitBy(1, time.Minute, keyfunc.ClientIP())(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for i, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Fatalf("request %d through httprate.LimitBy: status %d, want %d", i+1, w.Code, want)
		}
	}
}

func TestGlobal(t *testing.T) {
	a := keyOf(t, keyfunc.Global(), newReq("192.0.2.1:1"))
	b := keyOf(t, keyfunc.Global(), newReq("@"))
	if a != keyfunc.GlobalKey || b != keyfunc.GlobalKey {
		t.Fatalf("Global keys %q, %q; want %q", a, b, keyfunc.GlobalKey)
	}
}

func TestStrict(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name    string
		fn      keyfunc.KeyFunc
		want    string
		wantErr error
	}{
		{"passes_key", httprate.Key("k"), "k", nil},
		{"empty_key_is_error", httprate.Key(""), "", keyfunc.ErrNoKey},
		{"foreign_error_wrapped", func(*http.Request) (string, error) { return "x", boom }, "", boom},
		{"own_error_kept", keyfunc.ClientIP(), "", keyfunc.ErrNoKey},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := keyfunc.Strict(tc.fn)(newReq("@"))
			if tc.wantErr == nil {
				if err != nil || got != tc.want {
					t.Fatalf("got %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			wantNoKey(t, err)
			if !errors.Is(err, tc.wantErr) || got != "" {
				t.Fatalf("got %q, %v; want error wrapping %v", got, err, tc.wantErr)
			}
		})
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Strict(nil) did not panic")
		}
	}()
	keyfunc.Strict(nil)
}

func TestMust(t *testing.T) {
	if got := keyfunc.Must(42, nil); got != 42 {
		t.Fatalf("Must = %d", got)
	}
	defer func() {
		err, ok := recover().(error)
		if !ok || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("Must panicked with %v, want the error", err)
		}
	}()
	keyfunc.Must(0, errors.New("boom"))
}
