// Package middleware is sluice's net/http middleware. It has the standard
// signature, func(http.Handler) http.Handler, so it works with
// [http.ServeMux], and with chi globally (r.Use), per route (r.With) and per
// group.
//
// For each request the [Limiter] matches its rules, decides all of them in
// one store call under a latency budget (see [decide.WithBudget]; an
// in-process store's call, which does no I/O, needs none), and then:
//
//   - admitted: sets the rate-limit headers and calls the next handler;
//   - refused by a rule: answers 429 Too Many Requests with Retry-After
//     (unless the request's cost can never pass), Cache-Control: no-store,
//     the rate-limit headers and an application/problem+json body (RFC 9457)
//     naming the violated policies;
//   - the store failed: each matched rule applies its on_fail policy. If any
//     is closed, 503 Service Unavailable with Retry-After and a
//     temporary-reduced-capacity problem; otherwise the request goes on. The
//     store's error never reaches the client. When the store failed only
//     some rules' hits ([sluice.PartialError], such as one Redis Cluster
//     slot down), only those rules apply their on_fail; the others count by
//     their results, and a request refused either way gives back what the
//     decided rules took;
//   - a rule could not key the request (its key function failed): 400 Bad
//     Request, with a problem body that names no internals. A request that
//     cannot be keyed is never counted in a shared bucket. A request that
//     lacks the identity a rule's key reads (no API key header, no user) is
//     not keyed by that rule at all: the rule skips it, unless its key is
//     required (keyfunc.Key.Required), when it gets this 400 too. A key
//     that needs the route pattern, run before routing
//     (keyfunc.ErrNotRouted), is the server's mistake: 500, with a detail
//     saying so and a warning in the log naming the fix (see [WriteError]);
//
// The decision itself is the [decide] package's, which the gRPC
// interceptors and the Envoy rate limit service share: the middleware
// turns its outcome into a status, headers and a problem body, and takes
// its options ([decide.WithBudget], [decide.WithLogger], ...) beside its
// own. The request body is never read. Every decision is reported to the
// [sluice.Observer] given with [decide.WithObserver], or else to the
// store's own ([sluice.ObserverSource]).
//
// # Headers
//
// Shadow rules, hidden rules and rules decided by on_fail never appear in
// the headers. The RateLimit field describes the binding rule (see
// [decide.Outcome]): for a refused request the rule that refused it for
// longest, else the rule closest to its limit. RateLimit-Policy lists
// every exposed rule matched. Select the fields with [decide.WithHeaders];
// the default is the current IETF draft.
package middleware
