// Package envoy is an Envoy rate limit service
// (envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit) over
// sluice's rules and stores, so that Envoy, Istio or any Envoy-based
// gateway can use sluice's algorithms, its all-or-nothing decisions across
// descriptors and its Redis Cluster support. The command
// cmd/sluice-envoy runs it.
//
// # Mapping files
//
// Descriptors map to rate limits through mapping files in the format of
// envoyproxy/ratelimit's configuration, read as they are:
//
//	domain: api                       # required, one per document; "---" separates documents
//	descriptors:
//	  - key: remote_address           # a key alone matches any value: one bucket per value
//	    rate_limit:
//	      unit: minute                # second, minute, hour, day, week, month (30 days), year (365 days)
//	      requests_per_unit: 60
//	      name: per-ip
//	  - key: user                     # signed-in users are counted per user, not per address
//	    rate_limit:
//	      unit: minute
//	      requests_per_unit: 120
//	      replaces: [{name: per-ip}]  # a request this limit counts is not counted by per-ip
//	  - key: generic_key
//	    value: login                  # key and value: this value only
//	    descriptors:                  # nested: the request's next entry
//	      - key: remote_address
//	        rate_limit: {unit: minute, requests_per_unit: 5, name: login-per-ip}
//	  - key: path
//	    value: "/static/*"            # '*' matches any run of bytes
//	    share_threshold: true         # every path it matches shares one bucket
//	    rate_limit: {unit: second, requests_per_unit: 500}
//	  - key: user_agent
//	    value: internal-batch
//	    rate_limit: {unlimited: true} # never counted
//	  - key: plan
//	    value: trial
//	    shadow_mode: true             # counted and reported, never refuses
//	    rate_limit: {unit: hour, requests_per_unit: 100}
//
// A descriptor entry matches, level by level, a descriptor of its key and
// value, else one whose value pattern matches it (in file order), else one
// of its key alone; the request descriptor's rate limit is that of the
// descriptor its last entry matches, as in envoyproxy/ratelimit. A limit
// is named by its name, or by its path of key_value names from the domain
// ("api.generic_key_login.remote_address"); the name appears in metrics,
// in the RateLimit headers and in the response's current_limit, and
// replaces refers to it. Two limits of a domain may not share a name.
// detailed_metric and value_to_metric are accepted and change nothing:
// sluice's metrics count by limit name, never by descriptor value.
// requests_per_unit: 0, quota_mode and metadata mean what they mean in
// envoyproxy/ratelimit (see Decisions and [WithDynamicMetadata]).
//
// sluice's own fields, all optional:
//
//	unmatched: ok                     # top level: ok (default) or over_limit, see below
//	defaults:                         # top level: for every rate_limit of the document
//	  algorithm: token_bucket         # token_bucket (default), sliding_window, fixed_window, sliding_log
//	  on_fail: local                  # local (default), open or closed: when the store fails
//	  expose: true                    # false: kept out of the RateLimit headers
//	descriptors:
//	  - key: api_key
//	    rate_limit:
//	      unit: second
//	      requests_per_unit: 10
//	      burst: 50                   # token_bucket only: capacity beyond the rate
//	      algorithm: sliding_window   # and on_fail, expose: as in defaults, for this limit
//
// A limit of requests_per_unit per unit becomes a rule of requests_per_unit
// per unit's length. The default algorithm, the token bucket, admits the
// same sustained rate as envoyproxy/ratelimit's fixed windows without
// their doubled burst at a window's edge; algorithm: fixed_window gives
// its behaviour exactly (windows aligned to the Unix epoch). Each limit is
// checked in full at load, as a rule file's rules are: a mapping with a
// mistake is refused with a [*MappingError] naming the file, the line and
// the field, such as
//
//	envoy: ratelimit.yaml:7: domain "api": descriptors[1].rate_limit.unit: "minutes" is not a unit (second, minute, hour, day, week, month, year)
//
// A file is at most [MaxMappingSize] bytes and may make the reader visit
// at most 200,000 values, its YAML aliases expanded. A message names an
// unknown field only when its name is at most 24 bytes long: a longer one
// is more likely a secret pasted in the wrong place, and is described by
// its length. Rule files (rules/rulefile) are read by the same rules.
//
// Each domain is defined once, in one document of one file, unless the
// documents are merged ([MergeDomains], MERGE_DOMAIN_CONFIG=true for the
// command): then each document adds its top-level descriptors to the
// domain, and one that repeats another's top-level key and value is
// refused, as envoyproxy/ratelimit refuses a duplicate composite key.
//
// # Descriptors no limit applies to
//
// A descriptor that matches no rate limit of its domain is answered per
// the document's unmatched field: ok (the default, as envoyproxy/ratelimit
// does) answers it OK and counts nothing; over_limit answers it, and so
// the request, OVER_LIMIT, consuming nothing in the request's other
// descriptors: only what the mapping names passes. A domain the mapping
// does not define is answered per [WithUnknownDomain], OK by default. An
// unknown key is never an error.
//
// # Decisions
//
// All of a request's counted descriptors are decided together in one
// [sluice.Store] Take: the request is OVER_LIMIT when one enforcing
// descriptor is over its limit, and then nothing is consumed in any of its
// descriptors (envoyproxy/ratelimit counts the others anyway). On one
// Redis node that is one script call; on Redis Cluster one per hash slot,
// with exact refunds when one slot refuses (see store/redisstore). The
// decision is the decide package's, the same as the HTTP middleware's and
// the gRPC interceptors': the service takes its options
// ([decide.WithBudget], [decide.WithLogger], ...) beside its own, and turns
// its outcome into the response.
//
// A limit of requests_per_unit: 0 bans the descriptors it matches: each is
// OVER_LIMIT, without duration_until_reset or Retry-After (no wait lets it
// pass), also when it only checks (hits_addend 0). The request is refused
// before anything is counted, as with unmatched: over_limit: its other
// descriptors consume nothing and are answered OK with their
// current_limit. In shadow_mode such a descriptor is OK; a limit that
// replaces it, or a limit override, lifts the ban; in quota_mode it is a
// quota descriptor always over.
//
// A descriptor with quota_mode: true refuses a request only when all of
// the request's quota descriptors are over their limits, as
// envoyproxy/ratelimit documents it; each still reports its own status
// (OVER_LIMIT when over). A descriptor without quota_mode refuses as
// always, and a request with one quota descriptor is refused when that one
// is over, as by any limit. A refused request consumes nothing in any of
// its descriptors: what its quota limits, or, refused by them, its other
// limits took is given back ([sluice.Refunder]; with a store that cannot
// give back, it stays taken, as envoyproxy/ratelimit counts it).
//
// A descriptor's cost is its hits_addend, else the request's, 0 meaning 1.
// A descriptor's own hits_addend of 0 checks without consuming: its status
// is OVER_LIMIT when one more request would not pass, and a request of
// such checks only is OVER_LIMIT when one check is; beside descriptors
// that consume, such a check reports its state and refuses nothing.
// is_negative_hits is refused. A descriptor's limit override
// (RateLimitDescriptor.limit) replaces the rate of the limit it matched,
// keeping the limit's bucket and algorithm, or, matching none, is counted
// as "<domain>.limit_override" with the domain's defaults; an override is
// never in shadow mode.
//
// The response has, per descriptor, OK or OVER_LIMIT, current_limit (the
// limit's name, requests_per_unit and unit), limit_remaining, and
// duration_until_reset: for a descriptor over its limit, the time until
// the request would pass (exact for every algorithm), otherwise the time
// until its bucket is full again. A request over a limit the store has
// refused just before is answered from the store's refusal memory, with no
// store call: its other descriptors then report limit_remaining and
// duration_until_reset as the store last said them of their buckets,
// counted forward (0 for a bucket the store's record does not hold), as
// a store call would, since a refused request consumes nothing.
// response_headers_to_add carries the
// rate-limit header fields of [decide.WithHeaders] (by default the IETF
// draft's RateLimit-Policy and RateLimit) describing the binding limit, and
// Retry-After for a request over the limit that can pass later; shadow
// limits and limits with expose: false never appear in them. Envoy adds
// them to the response, to the 429 as to an admitted request's.
//
// # Malformed requests and store failures
//
// A request without a domain or descriptors, a descriptor without entries,
// an entry without a key, and requests beyond [MaxDescriptors],
// [MaxEntries], [MaxEntryLen] or [MaxHitsAddend] are answered with
// codes.InvalidArgument saying which descriptor and entry is wrong.
//
// When the store fails, or does not answer within the budget
// ([decide.WithBudget]), each limit applies its on_fail: local decides in
// process on the limit's share (the limit divided by the instances sharing
// the store, [decide.WithInstances]), open lets the descriptor pass, closed
// answers the request with codes.Unavailable, which Envoy's filter turns
// into a refusal when failure_mode_deny is set (status_on_error chooses its
// status). When the store fails some descriptors only (on Redis Cluster,
// one hash slot's shard down), only their limits apply on_fail: the other
// descriptors keep the store's statuses, limit_remaining and headers, and a
// request refused either way (OVER_LIMIT, or Unavailable) gives back what
// those took, so that it consumes nothing.
//
// # Health and metrics
//
// [Service.HealthHandler] is a readiness probe. The rules' decisions and
// the store's calls go to the observer ([decide.WithObserver]; the metrics
// package's Collector exports them). [WithRegisterer] adds the service's
// own: sluice_envoy_requests_total{domain,code},
// sluice_envoy_descriptors_total{domain,match} and
// sluice_envoy_request_duration_seconds.
package envoy
