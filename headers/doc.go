// Package headers writes rate-limit header fields: RateLimit-Policy and
// RateLimit (the IETF draft), draft-06's RateLimit-Limit, -Remaining and
// -Reset, GitHub-style X-RateLimit-*, and Retry-After.
//
// It only formats. Which rules a response describes (shadow and unexposed
// rules left out), which one binds, whether the response is a 429: the
// caller decides all that (the decide package does, for the middleware,
// the gRPC interceptors and the Envoy service), and this package returns
// the fields as name/value pairs ([AppendFields], [RetryAfter]) or sets
// them in an http.Header ([Write], [SetFields], [SetRetryAfter]), and
// nothing else. Go stores field names in canonical form (RateLimit becomes
// Ratelimit), which is harmless as field names are case-insensitive; read
// them with [http.Header.Get].
//
// # Modes
//
// A [Mode] selects the fields; modes combine. The examples below describe
// one rule, "default", of 100 requests per minute: 42 remain and the
// bucket is full again in 34.2 s.
//
// IETF, the [Default], follows draft-ietf-httpapi-ratelimit-headers-10,
// whose field syntax is unchanged from -08 to -11. Both fields are
// Structured Field Lists; RateLimit-Policy lists every policy given and
// RateLimit the binding one:
//
//	RateLimit-Policy: "default";q=100;w=60
//	RateLimit: "default";r=42;t=35
//
// Draft06 follows draft-ietf-httpapi-ratelimit-headers-06, the last
// revision with separate fields. RateLimit-Reset is delta seconds, never a
// Unix time; RateLimit-Policy lists every policy, as Integer Items:
//
//	RateLimit-Limit: 100
//	RateLimit-Remaining: 42
//	RateLimit-Reset: 35
//	RateLimit-Policy: 100;w=60
//
// When IETF and Draft06 are combined, RateLimit-Policy takes the IETF form.
//
// XRateLimit writes the fields GitHub and go-chi/httprate use. Unlike
// every RateLimit-* field, X-RateLimit-Reset is a Unix time, in seconds
// (here for a response sent at 1700000000.5):
//
//	X-RateLimit-Limit: 100
//	X-RateLimit-Remaining: 42
//	X-RateLimit-Reset: 1700000035
//
// [None] writes none of them.
//
// # Values
//
// A policy's quota q and window w come from its limit's sustained rate,
// rescaled to a whole number of seconds by [Quota]: 10 per 100ms is
// q=100;w=1. The Limit fields of Draft06 and XRateLimit carry the same q.
// A limit whose Burst differs from its Rate adds a vendor parameter
// carrying the capacity, in both policy forms:
//
//	RateLimit-Policy: "api";q=100;w=60;sluice-burst=200
//
// r (and every Remaining) is the binding result's Remaining, at least 0.
// With a burst it can exceed q.
//
// t (and RateLimit-Reset) is in seconds, rounded up:
//
//   - for a denied result, the time until the request would pass: the
//     Retry-After value ([RetryAfterSeconds] of RetryAfter, at least 1), so
//     t never points later than Retry-After;
//   - for an allowed result, and for one that can never pass
//     (Unsatisfiable), the time until the quota is whole again
//     (ResetAfter). When that is 0, the quota is already whole and t is
//     left out (draft-06's Reset, which is required, is 0).
//
// X-RateLimit-Reset is the same moment as a Unix time, rounded up to a
// whole second: never earlier than the moment itself.
//
// Policy names are Structured Field Strings, which hold printable ASCII
// only: [SanitizeName] replaces anything else with '?' and truncates long
// names. Every Integer is clamped to 999,999,999,999,999 (15 digits, the
// most a Structured Field Integer holds), so the fields always parse.
//
// # Retry-After
//
// [SetRetryAfter] sets Retry-After for a denied result, as delay
// seconds rounded up and at least 1. Leave it out for an Unsatisfiable
// result, whose cost exceeds the capacity: no wait would help. Retry-After
// does not depend on the mode.
package headers
