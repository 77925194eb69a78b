package keyfunc_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/sluicehq/sluice/keyfunc"
)

// A server exposed directly to clients keys on the peer address; headers a
// client sends cannot change it.
func ExampleClientIP() {
	key := keyfunc.ClientIP()

	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "198.51.100.7:52311"
	r.Header.Set("X-Forwarded-For", "203.0.113.1") // spoofed, ignored
	fmt.Println(key.Identity(r))

	r.RemoteAddr = "[::ffff:198.51.100.7]:52311" // dual-stack listener
	fmt.Println(key.Identity(r))

	r.RemoteAddr = "[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:443"
	fmt.Println(key.Identity(r))

	r.RemoteAddr = "@" // a Unix socket has no client IP
	_, err := key.Identity(r)
	fmt.Println(errors.Is(err, keyfunc.ErrNoKey))
	// Output:
	// 198.51.100.7 <nil>
	// 198.51.100.7 <nil>
	// 2001:db8:1:2:: <nil>
	// true
}

// Behind proxies in 10.0.0.0/8 that append to X-Forwarded-For, the client
// is the rightmost address that is not a proxy.
func ExampleXFF() {
	trusted, err := keyfunc.ParsePrefixes("10.0.0.0/8")
	if err != nil {
		panic(err)
	}
	resolver, err := keyfunc.XFF(trusted)
	if err != nil {
		panic(err)
	}
	key, err := keyfunc.IP(keyfunc.IPConfig{Resolver: resolver, IPv6Prefix: 56})
	if err != nil {
		panic(err)
	}

	show := func(peer, xff string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = peer
		r.Header.Set("X-Forwarded-For", xff)
		k, err := key.Identity(r)
		fmt.Printf("%q %v\n", k, err)
	}
	show("10.0.0.2:80", "6.6.6.6, 203.0.113.1, 10.1.1.1")   // client wrote 6.6.6.6 itself
	show("10.0.0.2:80", "2001:db8:1:2ff::1")                // grouped by /56
	show("198.51.100.7:80", "203.0.113.1")                  // not from a proxy: header ignored
	show("10.0.0.2:80", "203.0.113.1, not-an-ip, 10.1.1.1") // fails closed
	show("10.0.0.2:80", "10.3.3.3")                         // every hop trusted: fails closed
	// Output:
	// "203.0.113.1" <nil>
	// "2001:db8:1:200::" <nil>
	// "198.51.100.7" <nil>
	// "" keyfunc: no key: malformed X-Forwarded-For entry "not-an-ip" (2 from the right)
	// "" keyfunc: no key: every X-Forwarded-For entry is a trusted proxy
}

// Behind Cloudflare, read CF-Connecting-IP, but only from Cloudflare.
func ExampleTrustedHeader() {
	cloudflare, err := keyfunc.ParsePrefixes("173.245.48.0/20", "2400:cb00::/32")
	if err != nil {
		panic(err)
	}
	resolver, err := keyfunc.TrustedHeader("CF-Connecting-IP", cloudflare)
	if err != nil {
		panic(err)
	}

	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("CF-Connecting-IP", "203.0.113.1")
	for _, peer := range []string{"173.245.48.10:443", "198.51.100.7:443"} {
		r.RemoteAddr = peer
		fmt.Println(resolver(r))
	}
	// Output:
	// 203.0.113.1 <nil>
	// 198.51.100.7 <nil>
}

// Key by route pattern with the limiter in front of a ServeMux, where
// routing has not happened yet.
func ExampleEndpointFromMux() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /users/{id}", func(http.ResponseWriter, *http.Request) {})
	key := keyfunc.EndpointFromMux(mux)

	for _, target := range []string{"/users/1", "/users/2", "/no/such/page"} {
		k, _ := key.Identity(httptest.NewRequest("GET", target, nil))
		fmt.Println(k)
	}
	// Output:
	// GET /users/{id}
	// GET /users/{id}
	// GET <unmatched>
}

type accountKey struct{}

// Join a user id from the request context with the endpoint, for a limit
// per user and route.
func ExampleJoin() {
	user := keyfunc.User(func(ctx context.Context) (string, bool) {
		id, ok := ctx.Value(accountKey{}).(string)
		return id, ok
	})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", func(http.ResponseWriter, *http.Request) {})
	key := keyfunc.Join(user, keyfunc.EndpointFromMux(mux))

	r := httptest.NewRequest("POST", "/orders", nil)
	r = r.WithContext(context.WithValue(r.Context(), accountKey{}, "u-42"))
	fmt.Println(key.Identity(r))

	_, err := key.Identity(httptest.NewRequest("POST", "/orders", nil)) // anonymous
	fmt.Println(err)
	// Output:
	// 4:u-42,12:POST /orders, <nil>
	// keyfunc: Join part #1: keyfunc: no key: no user in the request context
}

func ExampleAPIKey() {
	key := keyfunc.APIKey("X-API-Key")
	r := httptest.NewRequest("GET", "/", nil)
	_, err := key.Identity(r)
	fmt.Println(err)
	r.Header.Set("X-API-Key", "k_123")
	fmt.Println(key.Identity(r))
	// Output:
	// keyfunc: no key: no X-Api-Key header
	// k_123 <nil>
}

// An ip key groups IPv6 clients by prefix and keys an address that embeds
// an IPv4 address by that address; Parse shows the identity it gives an
// address.
func ExampleIP_grouping() {
	key, err := keyfunc.IP(keyfunc.IPConfig{IPv6Prefix: 48})
	if err != nil {
		panic(err)
	}
	for _, s := range []string{"2001:db8:1:2:3:4:5:6", "::ffff:192.0.2.1", "64:ff9b::192.0.2.1"} {
		k, _ := key.Parse(s)
		fmt.Println(k)
	}
	// Output:
	// 2001:db8:1::
	// 192.0.2.1
	// 192.0.2.1
}
