package admin

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"unicode"

	"github.com/sluicehq/sluice/internal/ident"
	"github.com/sluicehq/sluice/keyfunc"
)

// FuzzParseIdentity: every key kind either refuses an identity or reads a
// non-empty key; ip keys are addresses in canonical form.
func FuzzParseIdentity(f *testing.F) {
	for _, s := range []string{"192.0.2.7", "::ffff:192.0.2.7", "2001:db8::1", "fe80::1%eth0", "global", "", "GET /users/{id}",
		"alice GET /users/{id}", "sk_live_1", " \t", "a\x00b", "300.1.1.1", "GET <unmatched>"} {
		f.Add(s)
	}
	h := &handler{config: config{parsers: map[string]IdentityParser{}}}
	user := keyfunc.User(func(context.Context) (string, bool) { return "", false })
	keys := []keyfunc.Key{keyfunc.ClientIP(), keyfunc.Global(), keyfunc.Endpoint(), keyfunc.Join(user, keyfunc.Endpoint()), user,
		keyfunc.APIKey("X-API-Key"), keyfunc.Header("X-Tenant"), keyfunc.Join(keyfunc.Header("X-User"), keyfunc.Endpoint()),
		keyfunc.Join(keyfunc.Header("X-Tenant"), keyfunc.Header("X-User")), keyfunc.Join(keyfunc.ClientIP(), keyfunc.Endpoint())}
	f.Fuzz(func(t *testing.T, typed string) {
		for _, key := range keys {
			kind := key.Kind()
			id, err := h.parseIdentity(key, identity{texts: []string{typed}})
			if err != nil {
				if id != "" {
					t.Fatalf("%s %q: an error and a key %q", kind, typed, id)
				}
				continue
			}
			if id == "" {
				t.Fatalf("%s %q: an empty key without an error", kind, typed)
			}
			if kind == "ip" {
				a, perr := netip.ParseAddr(id)
				if again := ident.IPKey(a, 64); perr != nil || again != id {
					t.Fatalf("ip %q: key %q is not canonical (%v, %q)", typed, id, perr, again)
				}
			}
			if strings.ContainsFunc(id, unicode.IsControl) {
				t.Fatalf("%s %q: control characters in key %q", kind, typed, id)
			}
		}
	})
}
