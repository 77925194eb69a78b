// Package rules defines rate-limit rules, matches a request to its rules,
// turns them into [sluice.Hit] values for a store, and picks the result that
// binds (the one the response headers describe).
//
// A [Rule] has a name, a key function (what it counts by: client IP, user,
// API key, endpoint, a global bucket...), a limit, an algorithm, a cost, a
// policy for store failures, and optionally a request matcher. A [Set] holds
// validated rules: every check happens in [New], never per request.
//
// # Bucket keys
//
// The key of a rule's bucket encodes the rule's name, its key kind and the
// identity the key function returned, unambiguously (lengths are part of the
// encoding), so two rules never share a bucket and no identity can be
// crafted to reach another's. Stores hash it: the Redis store keeps only a
// keyed hash, never the identity in clear.
//
// The limit of an identity's bucket is not part of its key: it is, in
// order, the limit the request set for the rule ([sluice.WithLimit]),
// capped by the rule's MaxLimit; else the limit of the override naming the
// identity ([Rule.Overrides], looked up in memory); else the rule's Limit.
// A changed limit (a reload, another customer plan) applies to the bucket
// the identity already has.
//
// # Leases and hot keys
//
// A rule's Lease ([sluice.LeasePolicy]) reaches the store on each of its
// hits ([sluice.Hit.Lease]): a lease store (store/lease) serves the rule's
// buckets from local leases, detects its hot keys and leases or splits
// them; any other store ignores it. The wiring is that one pointer, so a
// rule set reloaded with new policies takes effect on the next request.
//
// # Rule files
//
// Rules can also come from a YAML or JSON file: package
// [github.com/sluicehq/sluice/rules/rulefile] reads, validates and
// reloads them, and builds a Set through this package's API.
//
// # Bypass
//
// A bypass entry ([Bypass], [Set.WithBypass]) exempts the requests it
// identifies (by client address, by API key, by user) from the rules and
// decides them by its own limit instead, keyed by the identity it matched,
// so a leaked bypass credential buys a bounded rate. The middleware reports
// each use to its observer and logs it, sampled.
package rules
