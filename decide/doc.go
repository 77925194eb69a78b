// Package decide is the protocol-independent half of rate limiting a
// request by a [rules.Set]: given the rules a request matched and the hits
// they ask of a [sluice.Store], it decides them and says what the answer
// is, leaving the answer's form (an HTTP 429, a gRPC status, an Envoy
// response) to the caller. The HTTP middleware, the gRPC interceptors and
// the Envoy rate limit service are built on it, so they decide alike.
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
//     consumes nothing.
//
// Every rule's part in the decision is reported to the observer
// ([WithObserver]); store failures, refusals and bypass uses are logged,
// each at most once a second ([WithLogger]), never with a key or an
// identity.
//
// The [Decision] a request gets says, per rule, whether the store, the
// local fallback or nobody decided it ([Decision.Decided]), whether it
// refused the request ([Decision.Refusing]), whether the rate-limit
// headers may describe it ([Decision.Headers]), and how long the client
// should wait ([Decision.RetryAfter]).
package decide
