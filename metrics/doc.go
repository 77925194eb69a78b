// Package metrics exports sluice's decisions and store health to Prometheus.
//
// A [Collector] is at once a [prometheus.Collector] (register it with a
// registry), a [sluice.Observer] with the optional
// [sluice.StoreCallObserver], and a [sluice.StoreEvents]. Attach it in one
// place, the Redis store's configuration: a middleware on that store
// reports its decisions and store calls to it too (the store is a
// [sluice.ObserverSource]):
//
//	c, err := metrics.New(metrics.Config{Registerer: prometheus.DefaultRegisterer})
//	if err != nil { ... }
//	store, err := redisstore.New(client, redisstore.Config{Events: c})
//	limiter, err := middleware.New(store, set) // observed by c
//	mux.Handle("/metrics", promhttp.Handler())
//
// Through Events the store also reports circuit-breaker transitions,
// script reloads and healed keys. Over the in-process store, give it to the middleware:
// middleware.WithObserver(c). An explicit WithObserver also replaces the
// store's collector for that middleware; to combine the two, use
// [sluice.Observers](c, other).
//
// # Metrics
//
// With the default namespace "sluice":
//
//	sluice_decisions_total{rule, outcome}                counter
//	    One per rule per request: how the rule took part in the decision.
//	    outcome is the Outcome's String: allowed, denied, shadow_denied,
//	    failed_open, failed_closed, local or bypassed ("unknown" for a
//	    value out of range, in a series that exists only if that happens).
//	sluice_refusals_remembered_total{rule}               counter
//	    The denied decisions a store answered in process, from its memory
//	    of an earlier refusal of the bucket, with no store call (see
//	    redisstore.Config.RememberRefusals); counted in decisions_total
//	    too. Such a request makes no store call: the calls below leave it
//	    out.
//	sluice_store_call_duration_seconds{result}           histogram
//	    One per store call (per request, not per rule); result is "ok" or
//	    "error". Default buckets: DefaultBuckets, 50 µs to 1 s.
//	sluice_store_errors_total{kind, ambiguous}           counter
//	    One per failed store call. kind is ErrorKind's answer; ambiguous
//	    is "true" when the store could not know whether the call was
//	    applied (as sluice.IsAmbiguous reports).
//	sluice_breaker_state{endpoint}                       gauge
//	    The circuit breaker of a store endpoint: 0 closed, 1 open,
//	    2 half-open (the values of sluice.BreakerState).
//	sluice_breaker_transitions_total{endpoint, from, to} counter
//	    Breaker state changes; from and to are "closed", "open" or
//	    "half_open".
//	sluice_script_reloads_total{endpoint}                counter
//	    Times an endpoint had lost the store's script and it was sent again.
//	sluice_state_healed_total{endpoint}                  counter
//	    Bucket keys an endpoint held with something that is not a bucket's
//	    state (another type, a value that does not parse), which the store
//	    replaced with an empty bucket.
//	sluice_store_evicting{endpoint}                      gauge
//	    1 when the endpoint's eviction policy (a maxmemory limit with a
//	    policy other than noeviction) can evict rate-limit keys, 0 when it
//	    cannot, -1 when the endpoint refuses to tell (CONFIG forbidden, as
//	    managed services often do); read at start and every
//	    redisstore.Config.PolicyCheckInterval.
//	sluice_memstore_evictions_total                      counter
//	    Buckets the in-process store evicted at its bound (memstore's
//	    Config.MaxBuckets), each forgiven what it had used. Give the
//	    Collector to memstore.Config's Events field.
//	sluice_resets_total{rule}                            counter
//	    Buckets an operator reset (see the rules/admin package), by rule.
//
// A single gauge carries the breaker state, rather than one series per
// state, so that "sluice_breaker_state > 0" selects every endpoint whose
// breaker is not closed, and max_over_time shows the worst state of a range.
//
// Every series of sluice_store_errors_total and both result series of the
// histogram exist, at zero, from the start; a rule's seven outcome series
// appear, at zero, the first time the rule is observed, so that rate() and
// alerts see the first denial or failure of a rule.
//
// The store call metrics come from [Collector.ObserveStoreCall], which the
// middleware calls on an observer that implements
// [sluice.StoreCallObserver]. An observer that forwards to a Collector (to
// feed other sinks as well) must forward ObserveStoreCall too.
//
// # Cardinality
//
// Label values are rule names (and bypass entry names), outcomes, error
// kinds, breaker states and store endpoints. They are never keys, user
// identities, API keys or client addresses: a [sluice.Decision] carries none,
// and the collector never reads an error's message. Rule names are bounded by
// configuration; as a safeguard, a collector labels at most
// [Config.MaxRules] distinct rule names (default 1000) and counts the
// decisions of any further name under the rule label [OtherRule]. Series are
// never deleted: a rule removed by a reload, or an endpoint gone from the
// topology, keeps its last values until the process restarts.
//
// # Cost
//
// Observe runs for every rule of every request. After a rule's first
// observation it is a lock-free map lookup and an atomic add: no locks, no
// allocations. ObserveStoreCall is one histogram observation, plus, for a
// failed call, the classification of its error; neither allocates.
package metrics
