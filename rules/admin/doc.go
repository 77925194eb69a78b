// Package admin is the operator's face of a rule set: given a rule's name
// and an identity as an operator types it (an IP address, a user id, an
// API key, ...), it shows the identity's bucket under each matching rule
// (remaining, reset-after, retry-after) and resets it, so "why is this
// customer limited, and unblock them now" needs no access to Redis and no
// knowledge of its keyed hashes.
//
// [New] returns an [http.Handler]. It has no authentication of its own:
// mount it behind yours, on an address clients cannot reach (the gateway
// example serves it on a listen address of its own, off by default). One
// handler covers every limiter of an application that share a store:
// pass the rules of the others with [WithRules].
//
//	GET  /rules                          the rules: name, key kind, limit, algorithm
//	POST /inspect  {"rule": "per-ip", "identity": "192.0.2.7"}
//	POST /reset    {"rule": "per-ip", "identity": "192.0.2.7"}
//
// Instead of "rule", "kind" selects every rule of that key kind ("ip",
// "user", ...). Both answer {"buckets": [...]}, one entry per matching
// rule, read with a peek at the rule's cost (nothing is consumed):
//
//	{"rule": "per-ip", "kind": "ip", "identity": "192.0.2.7", "limit": "100/1m",
//	 "algorithm": "token_bucket", "allowed": false, "remaining": 0,
//	 "reset_after_ms": 60000, "retry_after_ms": 600}
//
// "limit" is the limit in force for the identity: an override's when one
// names it (rules.Rule.Overrides). A window algorithm's bucket also says
// what its current period has "used"; "reset_after_ms" is when the bucket
// is full again (for a fixed window, the end of the current one).
//
// Reset answers the state after the reset. Errors are RFC 9457 problem
// details (application/problem+json): 400 for a malformed request or
// identity, 404 for an unknown rule or a kind no rule keys on, 501 for a
// reset on a store that is not a [sluice.Resetter] or whose Reset returns
// an error wrapping [errors.ErrUnsupported] (the problem's detail names
// it), 502 when the store fails. Bad input is refused before any store call.
//
// # Identities
//
// An identity is read by the rule's key ([keyfunc.Key.Parse]) into exactly
// the identity the key gives the requests of that identity, or refused
// with 400 and a detail stating the form the key needs: a reset never goes
// to a bucket no request could be keyed to. By key kind:
//
//   - ip: an IPv4 or IPv6 address, normalised and grouped as the rule's
//     key groups it (::ffff:192.0.2.7 is 192.0.2.7; IPv6 by /64, or the
//     key's own prefix);
//   - global: empty or "global";
//   - endpoint: a method and a route pattern, "GET /users/{id}";
//   - user, api_key, header:NAME: the user id, the API key, the header's
//     value, as is, without surrounding spaces and tabs;
//   - joined keys (user_endpoint, header:X-User_endpoint, ...): the
//     identities of the parts in order, separated by spaces, "alice POST
//     /login"; or, where a part's identity holds spaces, a JSON list of one
//     identity per part: {"identity": ["Alice Smith", "POST /login"]};
//   - custom kinds: what the key's parser reads ([keyfunc.Key.ParseWith]),
//     else the text as the key's function returns it.
//
// [WithIdentity] replaces the parser of a kind.
//
// # Audit
//
// Every reset is logged through slog (rule, key kind, and a keyed hash of
// the identity, never the identity itself) and reported to an observer
// that implements [sluice.ResetObserver], such as the metrics package's
// Collector (sluice_resets_total).
package admin
