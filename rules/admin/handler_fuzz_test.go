package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/rules/admin"
	"github.com/sluicehq/sluice/store/memstore"
)

// FuzzQuery posts arbitrary bodies to /inspect and /reset: every one is
// answered (never a panic), with a JSON body, and a request the operator
// got wrong is a 4xx, never a 500: the store (memstore) cannot fail.
func FuzzQuery(f *testing.F) {
	for _, s := range []string{
		`{"rule":"per-ip","identity":"192.0.2.7"}`, `{"kind":"ip","identity":"2001:db8::1"}`,
		`{"rule":"global","identity":"global"}`, `{"rule":"per-key","identity":"sk_live_1"}`,
		`{"rule":"per-ip","kind":"ip","identity":"1.2.3.4"}`, `{}`, `[]`, `null`, ``, `{"rule":"per-ip"}`,
		`{"rule":"per-ip","identity":"192.0.2.7"} {}`, `{"rule":"nope","identity":"x"}`, `{"extra":1}`,
		`{"rule":"per-ip","identity":"\u0000"}`, `{"rule":1}`, "\xff\xfe", strings.Repeat(`{"a":`, 100),
		`{"rule":"per-ip","identity":["192.0.2.7"]}`, `{"kind":"ip","identity":[]}`, `{"rule":"per-key","identity":["a","b"]}`,
		`{"rule":"global","identity":null}`, `{"rule":"global","identity":[null]}`, `{"rule":"per-ip","identity":{"a":1}}`,
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	store := memstore.New(memstore.Config{SweepInterval: -1})
	f.Cleanup(func() { store.Close(context.Background()) })
	h, err := admin.New(store, testRules)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string, reset bool) {
		path := "/inspect"
		if reset {
			path = "/reset"
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
		if rec.Code >= 500 || rec.Code < 200 {
			t.Fatalf("POST %s %q: status %d: %s", path, body, rec.Code, rec.Body)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("POST %s %q: status %d with a body that is not JSON: %q", path, body, rec.Code, rec.Body)
		}
	})
}
