package keyfunc_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/keyfunc"
)

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
		{"passes_key", constKey("k").Func(), "k", nil},
		{"empty_key_is_missing", constKey("").Func(), "", keyfunc.ErrMissing},
		{"foreign_error_wrapped", func(*http.Request) (string, error) { return "x", boom }, "", boom},
		{"own_error_kept", keyfunc.ClientIP().Func(), "", keyfunc.ErrNoKey},
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
