package keyfunc_test

import (
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/ident"
	"github.com/sluicehq/sluice/keyfunc"
)

// FuzzParseAddr: ParseAddr never panics, and either fails or returns a
// normalised address whose text re-parses to itself.
func FuzzParseAddr(f *testing.F) {
	for _, s := range []string{
		"192.0.2.1", "192.0.2.1:80", "[2001:db8::1]:443", "[::1]", "fe80::1%eth0",
		"::ffff:1.2.3.4", "[::ffff:1.2.3.4]:1", "", "@", "/tmp/s", "[", "]", "[]:",
		"1.2.3.4:99999", "01.2.3.4", "unknown", "_x", "[fe80::1%a]b]:80", "1:2",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := keyfunc.ParseAddr(s)
		if !ok {
			if a.IsValid() {
				t.Fatalf("address %s returned with a failure", a)
			}
			return
		}
		checkNormalised(t, a)
		b, ok := keyfunc.ParseAddr(a.String())
		if !ok || b != a {
			t.Fatalf("%q -> %s does not re-parse to itself: %s, %v", s, a, b, ok)
		}
	})
}

var fuzzTrusted = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("2001:db8:ffff::/48"),
}

// FuzzResolveIP drives every resolver, wrapped by IP with a random IPv6
// grouping, with random peers and headers. The key is either an error
// wrapping ErrNoKey or the canonical text of a normalised, masked address;
// an untrusted peer always keys on itself; XFF and TrustedHeader never
// return a trusted proxy's address.
func FuzzResolveIP(f *testing.F) {
	f.Add("10.0.0.1:1", "203.0.113.1, 10.0.0.2", "", "203.0.113.9", uint8(64))
	f.Add("[2001:db8:ffff::1]:1", "2001:db8:1:2::5", "1.1.1.1", "2001:db8::7", uint8(48))
	f.Add("198.51.100.7:9", "1.2.3.4", "", "5.6.7.8", uint8(128))
	f.Add("10.0.0.1", "garbage, 203.0.113.1", "10.0.0.3", "", uint8(56))
	f.Add("@", "1.2.3.4", "", "1.2.3.4", uint8(0))
	f.Add("[::ffff:10.0.0.1]:1", "::ffff:10.0.0.2, ::ffff:203.0.113.1", "", "::ffff:1.2.3.4", uint8(32))
	f.Add("[64:ff9b::10.0.0.1]:1", "2002:c000:201::1", "", "", uint8(64))

	xff := must(keyfunc.XFF(fuzzTrusted))
	hdr := must(keyfunc.TrustedHeader("CF-Connecting-IP", fuzzTrusted))
	f.Fuzz(func(t *testing.T, remote, xff1, xff2, cf string, bits uint8) {
		prefix := keyfunc.MinIPv6Prefix + int(bits)%(129-keyfunc.MinIPv6Prefix)
		r := &http.Request{Method: "GET", URL: &url.URL{Path: "/"}, RemoteAddr: remote, Header: http.Header{}}
		r.Header.Add("X-Forwarded-For", xff1)
		if xff2 != "" {
			r.Header.Add("X-Forwarded-For", xff2)
		}
		r.Header.Set("CF-Connecting-IP", cf)

		peer, peerErr := keyfunc.RemoteAddr(r)
		for name, res := range map[string]keyfunc.IPResolver{"remote": keyfunc.RemoteAddr, "xff": xff, "header": hdr} {
			a, err := res(r)
			if err != nil {
				checkNoKeyErr(t, err)
			} else {
				checkNormalised(t, a)
				if name != "remote" && inPrefixes(a, fuzzTrusted) {
					t.Fatalf("%s returned trusted proxy %s", name, a)
				}
			}
			if peerErr == nil && !inPrefixes(peer, fuzzTrusted) && (err != nil || a != peer) {
				t.Fatalf("%s: untrusted peer %s resolved to %s, %v", name, peer, a, err)
			}
			if peerErr != nil && err == nil {
				t.Fatalf("%s: resolved %s without a peer address", name, a)
			}

			key, kerr := must(keyfunc.IP(keyfunc.IPConfig{Resolver: res, IPv6Prefix: prefix})).Identity(r)
			if (kerr == nil) != (err == nil) {
				t.Fatalf("%s: resolver error %v but key error %v", name, err, kerr)
			}
			if kerr != nil {
				checkNoKeyErr(t, kerr)
				if key != "" {
					t.Fatalf("key %q with error", key)
				}
				continue
			}
			checkKey(t, key, prefix)
		}
	})
}

// checkKey checks that key is the canonical text of a normalised address,
// masked to prefix bits if it is IPv6.
func checkKey(t *testing.T, key string, prefix int) {
	t.Helper()
	k, err := netip.ParseAddr(key)
	if err != nil {
		t.Fatalf("key %q does not parse: %v", key, err)
	}
	checkNormalised(t, k)
	if k.String() != key {
		t.Fatalf("key %q is not canonical (%s)", key, k)
	}
	if k.Is6() {
		if p, _ := k.Prefix(prefix); p.Addr() != k {
			t.Fatalf("key %q has bits beyond /%d", key, prefix)
		}
	}
	if again := ident.IPKey(k, prefix); again != key {
		t.Fatalf("IPKey(%s, %d) = %q; not a fixed point", k, prefix, again)
	}
}

func checkNormalised(t *testing.T, a netip.Addr) {
	t.Helper()
	if !a.IsValid() || a.Zone() != "" || a.Is4In6() {
		t.Fatalf("address %s (valid %v) is not normalised", a, a.IsValid())
	}
}

func checkNoKeyErr(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, keyfunc.ErrNoKey) {
		t.Fatalf("error %v does not wrap ErrNoKey", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "keyfunc: ") || len(msg) > 300 {
		t.Fatalf("bad error message %q", msg)
	}
}

func inPrefixes(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// FuzzJoin: Join is injective. Two part lists give the same key only if
// they are equal, whatever the parts contain, and every key decodes back
// into its parts.
func FuzzJoin(f *testing.F) {
	f.Add("a:b", "c", "a", "b:c")
	f.Add("1:a,", "b", "1:a", ",b")
	f.Add("x", "", "x", "")
	f.Add("ab", "c", "a", "bc")
	f.Add("3:abc,", "d", "3:abc", ",d")
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		k1, err1 := join(a, b)
		k2, err2 := join(c, d)
		k3, err3 := join(a)
		if (err1 != nil) != (a == "" || b == "") || (err2 != nil) != (c == "" || d == "") || (err3 != nil) != (a == "") {
			t.Fatalf("errors %v, %v, %v do not match the empty parts", err1, err2, err3)
		}
		for _, err := range []error{err1, err2, err3} {
			if err != nil {
				checkNoKeyErr(t, err)
			}
		}
		if err1 == nil && err2 == nil && (k1 == k2) != (a == c && b == d) {
			t.Fatalf("Join(%q, %q) = %q, Join(%q, %q) = %q", a, b, k1, c, d, k2)
		}
		if err1 == nil && err3 == nil && k1 == k3 {
			t.Fatalf("two parts and one part give the same key %q", k1)
		}
		if err1 == nil {
			parts, ok := splitNetstrings(k1)
			if !ok || len(parts) != 2 || parts[0] != a || parts[1] != b {
				t.Fatalf("key %q decodes to %q, %v", k1, parts, ok)
			}
		}
	})
}

func join(parts ...string) (string, error) {
	fns := make([]keyfunc.Key, len(parts))
	for i, p := range parts {
		fns[i] = constKey(p)
	}
	return keyfunc.Join(fns...).Identity(&http.Request{})
}

// splitNetstrings decodes a concatenation of netstrings.
func splitNetstrings(s string) ([]string, bool) {
	var parts []string
	for s != "" {
		i := strings.IndexByte(s, ':')
		if i <= 0 {
			return nil, false
		}
		n, err := strconv.Atoi(s[:i])
		if err != nil || n < 0 || len(s) < i+1+n+1 || s[i+1+n] != ',' {
			return nil, false
		}
		parts = append(parts, s[i+1:i+1+n])
		s = s[i+1+n+1:]
	}
	return parts, true
}

// FuzzEndpointFromMux: whatever the method, path and host, the key is one
// of a fixed set: a folded method, and a registered pattern or Unmatched.
func FuzzEndpointFromMux(f *testing.F) {
	f.Add("GET", "/users/1", "")
	f.Add("CONNECT", "/x/123", "")
	f.Add("CONNECT", "/x/../y", "api.example.com")
	f.Add("BREW", "/static/a", "")
	f.Add("GET", "/v1/x", "api.example.com:80")
	f.Add("get", "", "")
	f.Add("POST", "//users/../users/", "")
	mux := newMux()
	fn := keyfunc.EndpointFromMux(mux)
	patterns := map[string]bool{keyfunc.Unmatched: true}
	for _, p := range []string{"/users/{id}", "/users/", "/static/", "/x/{id}/", "api.example.com/v1/{thing}"} {
		patterns[p] = true
	}
	f.Fuzz(func(t *testing.T, method, path, host string) {
		r := &http.Request{Method: method, URL: &url.URL{Path: path}, Host: host, Header: http.Header{}}
		key, err := fn.Identity(r)
		if err != nil {
			t.Fatalf("error %v", err)
		}
		m, p, ok := strings.Cut(key, " ")
		if !ok || !patterns[p] {
			t.Fatalf("%s %q (host %q): key %q outside the registered set", method, path, host, key)
		}
		if m != ident.OtherMethod && m != method && !(method == "" && m == "GET") {
			t.Fatalf("key %q: method %q does not come from %q", key, m, method)
		}
		if m == method && m != ident.OtherMethod {
			switch m {
			case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE", "QUERY":
			default:
				t.Fatalf("key %q keeps unusual method %q", key, m)
			}
		}
	})
}
