// Package rulefile reads rate-limit rules from a YAML file (or JSON, for a
// name ending in .json), checks them in full when they are loaded, and
// keeps them current while the service runs. It builds a [rules.Set], the
// same as rules written in Go, so a file's rules and Go's combine and share
// buckets.
//
// Read a file with [Parse], [LoadFile] or [Watch]:
//
//	version: 1                     # optional
//	defaults:                      # optional: algorithm, on_fail, expose, shadow
//	  on_fail: local
//	rules:
//	  - name: per-ip               # required, unique
//	    key: ip                    # required, see below
//	    key_required: false        # true: a request without the identity gets 400, not a skip
//	    limit: {rate: 100, per: 1m, burst: 200}   # burst optional (token_bucket only)
//	    # or a calendar limit: limit: {rate: 10000, calendar: month, zone: Europe/Berlin}
//	    algorithm: token_bucket    # or sliding_window, fixed_window, sliding_log
//	    cost: 1                    # optional, default 1
//	    max_cost: 10               # optional cap on a sluice.WithCost cost
//	    on_fail: open              # local (default) | open | closed
//	    expose: true               # false: kept out of the headers (rules.Rule.Hidden)
//	    shadow: false              # dry run
//	    enabled: true              # false: checked, then left out
//	    colocate: user             # optional: share a Redis Cluster slot with this identity's other buckets
//	    max_limit: {rate: 1000, per: 1m}   # optional cap on a sluice.WithLimit limit
//	    overrides:                 # optional: other limits for named identities
//	      - identities: [192.0.2.7]          # as the operator API reads them
//	        limit: {rate: 1000, per: 1m}
//	    plans: [free]              # only requests on these plans
//	    match:                     # only matching requests
//	      methods: [GET, POST]     # GET also matches HEAD
//	      routes: ["/items/{id}"]  # route patterns, never raw paths
//	      host: [api.example.com, "*.example.org"]
//	    lease:                     # optional: local leases (store/lease)
//	      max_lease: 25            # at least 2; enabled: false turns it off
//	      ttl: 2s                  # 1ms to 1m
//	    hot_keys:                  # optional: hot-key handling (store/lease)
//	      threshold: 1000          # store calls/s for one key; required
//	      lease: true              # lease hot keys
//	      split: 4                 # and/or split them into 2 to 64 sub-buckets
//	    count:                     # optional: count only these responses, give the rest back
//	      status: [401, 403, 5xx]  # HTTP statuses (100 to 599) or classes (1xx to 5xx)
//	      grpc: [Unauthenticated]  # gRPC codes by name
//	    penalty:                   # optional: block an identity the rule refuses
//	      block: 15m               # required: 1ms to 30d
//	      after: 3                 # refusals within the limit's period; default 1
//	bypass:                        # optional
//	  - name: office
//	    cidrs: [203.0.113.0/24]    # and/or api_keys: ["sha256:..."], users: [alice]
//	    limit: {rate: 50, per: 1s} # required
//
// A key is ip (the client address, from [LoadConfig].ClientIP), api_key
// (the [LoadConfig].APIKeyHeader header), user and user_endpoint (from
// [LoadConfig].User), endpoint (the route pattern, from
// [LoadConfig].Endpoint), header:NAME, global, or a name registered in
// [LoadConfig].Keys. A rule keyed on an identity a request may lack (an
// API key, a header, a user) applies only to requests that carry it, as
// the same rule written in Go does; with key_required: true a request
// without it is refused instead (400, as [keyfunc.Key.Required]). The key
// kind is the [keyfunc.Key.Kind] of the same key in Go, so moving rules
// between Go and a file keeps their buckets.
//
// colocate names a key kind (user, api_key, header:NAME, a registered
// name) whose identity the rule's buckets join on Redis Cluster
// (rules.Rule.Colocate): a per-user and a per-user-endpoint rule both
// colocated by user are decided in one atomic script call. Rules keyed by
// ip, endpoint or global cannot be colocated, and nothing can be colocated
// by those kinds: their buckets must spread over the cluster.
//
// A rule with plans applies to requests whose plan ([LoadConfig].Plan) is
// listed; a request without a plan matches only rules without plans. A rule
// with match applies to requests that meet every condition given. Routes
// are compared with the route pattern the endpoint function finds; when it
// cannot find one (before routing, without [LoadConfig].Endpoint) the rule
// applies, so a misconfiguration limits too much rather than too little.
// A rule file's rules combine like any others: every rule that applies is
// decided, a global rule alongside per-key ones, and the headers describe
// the binding one (the decide package chooses it).
//
// A rule with count counts only the requests whose responses it lists
// ([rules.Count]): each takes its cost when admitted, and gives it back
// when its status is not listed. An HTTP request is judged by status, a
// gRPC call by grpc. A handler that panics ends as 500, one that writes
// nothing as 200.
//
// Unknown fields are errors, so a misspelt field never passes unnoticed;
// so are values of the wrong type (rate: "100", enabled: no), rates that
// are not whole numbers of at least 1, periods under 1ms, a burst below the
// cost, a max_cost below the cost, unknown algorithms and key kinds,
// duplicate names, a count with an unknown status, class or gRPC code, a
// status outside 100 to 599 or an empty list, and a file without enabled
// rules. See [FileError].
// A file is at most [MaxFileSize] bytes and may make the reader visit at
// most 200,000 values, its YAML aliases expanded. A message names an
// unknown field only when its name is at most 24 bytes long: a longer
// one is more likely a secret pasted in the wrong place, and is described
// by its length.
//
// # Calendar limits
//
// limit: {rate: 10000, calendar: month, zone: Europe/Berlin} counts per
// period of a time zone's calendar: hour, day, week (from Monday) or month,
// in the IANA zone given (default UTC), across daylight saving changes and
// month lengths ([sluice.PerCalendar]). It counts as a fixed window aligned
// to the zone's boundaries, so the rule takes no algorithm (the file's
// default algorithm does not apply to it) and no burst. per and calendar
// are exclusive. Refused with the line and the field: per with calendar, a
// burst or an algorithm on a calendar rule, an unknown calendar, an
// unknown zone (named), zone: Local, and a zone without a calendar. Zones
// come from the system's zone database, or from time/tzdata when the
// program imports it.
//
// # Penalties
//
// penalty: {block: 15m} refuses every request of an identity the rule
// matches for 15 minutes once the rule has refused it (with after: N,
// once it has refused it N times within the limit's period), on every
// instance sharing the store, whatever its bucket holds; Retry-After is the
// time left ([rules.Penalty]). The block lives in the store with the
// rule's bucket, so an operator's reset lifts it. Refused with the line
// and the field: penalty without block, block without a unit, under 1ms
// or over 30 days, after below 1, a penalty on a shadow rule or on a
// sliding_log rule.
//
// # Overrides
//
// A rule's overrides replace its limit for the identities they list
// ([rules.Rule.Overrides]), with the rule's algorithm and in the same
// buckets. Identities are written as the operator API (rules/admin) reads
// them ([keyfunc.Key.Parse]): an address for ip, the header's value for
// header:NAME, the user id, "GET /users/{id}" for endpoint, "alice GET
// /users/{id}" for user_endpoint; a rule keyed by api_key lists keys by
// their SHA-256 ([HashAPIKey]), never in clear. An identity in a form the
// key cannot read is refused with the form it needs, as is an identity
// listed twice and overrides on a rule keyed by global, which has no
// identities. A file of [MaxFileSize] holds more than 10,000 identities.
//
// max_limit caps the limit a request may set for itself with
// sluice.WithLimit ([rules.Rule.MaxLimit]): it has the rule's period and is
// not below the rule's limit. Without it a request may lower the rule's
// limit, never raise it.
//
// # Bypass
//
// Entries under bypass exempt the requests they identify, by client
// network (cidrs), API key (api_keys) or user (users), from the rules and
// decide them by their own limit instead (see [rules.Bypass]). API keys are
// listed by their SHA-256 ([HashAPIKey]), never in clear; a request's key
// is hashed and looked up.
//
// # Reloading
//
// A [Watcher] reads its file again at an interval and on [Watcher.Reload],
// swaps the new Set in atomically, and keeps the last good one when a new
// file is invalid. Its documentation says what a changed limit does to the
// buckets that exist.
package rulefile
