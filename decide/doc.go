// Package decide is the request pipeline behind every front end: given a
// request (the *http.Request itself, or the one the gRPC interceptors
// build of a call) and a [rules.Set], one call, [Decider.Check], resolves
// the rules the request matches, decides them in one store call, and
// returns an [Outcome] that says what the answer is, leaving its form (an
// HTTP 429, a gRPC status, an Envoy response) to the front end. The HTTP
// middleware, the gRPC interceptors and the Envoy rate limit service are
// built on it, so they decide alike, take the same options ([Option]) and
// report the same errors ([ErrKeyFailed], [ErrStoreFailed],
// [ErrInvalidCost]). A front end that matches rules itself (the Envoy
// service matches descriptors) passes them to [Decider.Decide].
//
// A [Decider] makes one store call per request, under a latency budget
// ([WithBudget]), and handles what can go wrong with it:
//
//   - the store decides every hit: the request is admitted when every
//     enforcing hit passed ([sluice.Admitted]), else refused, and then
//     nothing is consumed;
//   - the store fails: each matched rule applies its on_fail policy
//     ([rules.OnFail]). A closed rule makes the request [Unavailable];
//     local rules are decided in process, each on its share of its limit
//     (the limit divided by the instances sharing the store, see
//     [WithInstances]); open rules pass;
//   - the store fails some hits only (a [*sluice.PartialError], such as
//     one Redis Cluster slot down): the failed rules apply their on_fail,
//     the others count by their results, and a request refused either way
//     gives back what the decided rules took, so that a refused request
//     consumes nothing;
//   - a rule cannot key the request, or its context sets a negative cost:
//     the request is [Invalid], and nothing is counted.
//
// Every rule's part in the decision is reported to the observer
// ([WithObserver]); store failures, refusals and bypass uses are logged,
// each at most once a second ([WithLogger]), never with a key or an
// identity.
//
// The [Outcome] says, per rule, whether the store, the local fallback or
// nobody decided it ([Outcome.Decided]) and whether it refused the request
// ([Outcome.Refusing]); which policies the rate-limit fields describe and
// which of them binds; the fields to send, as name/value pairs in the
// configured modes ([WithHeaders]); and how long the client should wait.
// [Outcome.Finish] is the step that runs when the request is over: it
// settles a charge made after the fact, and gives the outcome back to be
// reused.
package decide
