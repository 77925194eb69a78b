// Package keyfunc turns an HTTP request into the identity a rate-limit rule
// counts against: the client IP (grouped by network), a header, an API key,
// the authenticated user, the route pattern, a constant for global rules, or
// several of those joined.
//
// Every constructor returns a [Key]: a [KeyFunc], func(*http.Request)
// (string, error), with its kind ("ip", "api_key", ...), which rules make
// part of every bucket key. A function of your own becomes a Key with
// [New]. KeyFunc is a type alias, so the key functions of
// github.com/go-chi/httprate and any plain function of that signature fit
// [New], and [Key.Func] gives a Key's function to code that takes a plain
// one. Mind what httprate's functions key on: httprate.KeyByEndpoint uses the raw URL
// path, which gives a client a fresh bucket per URL on any route with a
// parameter (/users/1, /users/2, ...); use [EndpointFromMux] or
// chikey.Endpoint, which key on the route pattern. httprate.KeyByRealIP
// trusts spoofable headers; use [IP] with [XFF] or [TrustedHeader].
//
// A request may lack the identity a key reads (no API key header, no
// signed-in user): the rule then skips it, unless the key is
// [Key.Required], which refuses it (see [Key] and [ErrMissing]).
//
// An operator names an identity as they know it (an address, a user id,
// "alice POST /login" for a user joined with an endpoint); [Key.Parse]
// reads it into exactly the identity the key gives such a request, or
// refuses it with a [*FormError] stating the form the key needs. The
// operator handler (rules/admin) inspects and resets buckets that way.
//
// A key that needs the route pattern, run before routing has found it,
// fails with [ErrNotRouted], a mistake in the server's set-up that the
// middleware reports as such.
//
// The package depends on the standard library only; chi-specific key functions live in
// the sub-package keyfunc/chikey.
//
// # Threat model
//
// Key extraction is a security boundary. Whoever can choose their key can
// either evade a limit (a fresh bucket per request) or lock someone else out
// (spend the victim's bucket). The package therefore follows these rules:
//
//   - No forwarding header is trusted by default. [ClientIP] and [RemoteAddr]
//     use the TCP peer in r.RemoteAddr, which a client cannot forge.
//     X-Forwarded-For ([XFF]) and single-IP edge headers such as
//     CF-Connecting-IP ([TrustedHeader]) are read only when the peer itself
//     lies inside prefixes the operator configured as trusted proxies; from
//     any other peer they are ignored completely. True-Client-IP, X-Real-IP
//     and friends are never read unless named explicitly.
//   - X-Forwarded-For is walked from the right: each trusted proxy appends
//     the address it received the connection from, so the first entry that
//     is not a trusted proxy is the client. Entries further left were written
//     by that client and are never used.
//   - Fail closed. A key that cannot be resolved is an error wrapping
//     [ErrNoKey], never an empty string: an empty key would put every client
//     into one shared bucket. A malformed X-Forwarded-For entry stops the walk
//     with an error instead of falling back to a (less trusted) value further
//     left, and a chain in which every hop is a trusted proxy is an error too
//     (see [XFF]).
//   - Addresses are normalised before any trust check and before keying:
//     the IPv4-mapped form ::ffff:a.b.c.d is the same client as a.b.c.d, and
//     IPv6 zones (fe80::1%eth0) are dropped. Otherwise one client could appear
//     under two keys, or alias a trusted proxy past the prefix check.
//   - An IPv6 client usually controls at least a /64 (SLAAC gives it 2^64
//     addresses), so IPv6 keys are grouped by prefix, /64 by default and
//     configurable with [IPConfig]; IPv4 stays /32. Addresses that embed an
//     IPv4 address (NAT64 64:ff9b::/96, 6to4 2002::/16) are keyed by that
//     IPv4 address.
//   - Endpoint keys use the route pattern ("GET /users/{id}"), never the raw
//     path, which would give an attacker a bucket per URL. Unmatched requests
//     share one key per method ([Unmatched]) and unusual methods are folded
//     into one (see [Endpoint]).
//   - Error messages start with "keyfunc: " and never echo more than a short,
//     quoted prefix of attacker input; header values used as keys (API keys,
//     tenant ids) are never echoed at all.
//
// Keys are identities in clear text (IP addresses, API keys). The rules and
// store layers hash them with a keyed hash before they are stored, so nothing
// this package returns should be logged or stored as is.
//
// # Choosing an IP source
//
//   - Exposed directly to clients: [ClientIP] (the peer address).
//   - Behind proxies that append to X-Forwarded-For and whose address ranges
//     you know: [XFF] with those ranges, wrapped by [IP].
//   - Behind one edge that overwrites a single header (Cloudflare's
//     CF-Connecting-IP, nginx's X-Real-IP): [TrustedHeader] with the edge's
//     ranges, wrapped by [IP].
//
// Verify before going live: send a request from a known address and check
// the resolved key. Requests that reach the server without passing through
// the proxies keep their own peer address as key, so the server cannot be
// fooled by a client that bypasses the proxies.
package keyfunc
