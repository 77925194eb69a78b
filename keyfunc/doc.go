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
// [Key.Required], which refuses it (see [Key] and [ErrMissing]). A key
// function of httprate's shape says so by returning "": [Key.Identity]
// reads an empty identity as a missing one, so it never becomes a bucket
// shared by every request without one, nor (unless the key is required) a
// 400.
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
// # Security
//
// Key extraction is a security boundary: whoever can choose their key can
// evade a limit or spend someone else's bucket. So no forwarding header is
// trusted by default: [ClientIP] and [RemoteAddr] use the TCP peer, and
// X-Forwarded-For ([XFF], walked from the right) and single-address edge
// headers ([TrustedHeader]) are read only from peers inside the prefixes
// you configure as trusted proxies, through [IP]. A key that cannot be
// resolved fails closed, with an error wrapping [ErrNoKey], never an empty
// string that would put every client in one bucket. Addresses are
// normalised before any trust check; IPv6 clients are grouped by /64 by
// default ([IPConfig]); endpoint keys use the route pattern, never the raw
// path ([Endpoint]). Which IP source to choose, and the rest of the threat
// model: docs/security.md in the repository.
package keyfunc
