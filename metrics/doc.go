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
// A lease store wrapping that store passes its observer on
// (lease.Store.Observer), so a middleware on the lease store reports to c
// as well. Through Events the store also reports circuit-breaker starts
// and transitions, script reloads and healed keys. Over the in-process
// store, give it to the middleware: decide.WithObserver(c). An
// explicit WithObserver also replaces the store's collector for that
// middleware; to combine the two, use [sluice.Observers](c, other), which
// counts each decision once even where both are c.
//
// # Metrics
//
// With the default namespace "sluice" the collector exports
// sluice_decisions_total{rule, outcome} (one per rule per request),
// sluice_refusals_remembered_total{rule},
// sluice_penalties_started_total{rule} (blocks a rule's penalty started),
// sluice_request_limits_total{rule, action} (limits requests set with
// [sluice.WithLimit] that a rule capped or ignored),
// sluice_store_call_duration_seconds{result} (buckets [DefaultBuckets]),
// sluice_store_errors_total{kind, ambiguous} (kind is [ErrorKind]'s
// answer), sluice_breaker_state{endpoint} (from the breaker's start) and
// sluice_breaker_transitions_total{endpoint, from, to},
// sluice_script_reloads_total{endpoint}, sluice_state_healed_total{endpoint},
// sluice_store_evicting{endpoint}, sluice_memstore_evictions_total (give the
// Collector to memstore.Config's Events field) and sluice_resets_total{rule};
// [NewLease] the lease store's. What each means, the dashboard and the
// alerts over them: docs/operations.md in the repository. The error series
// exist at zero from the start, and a rule's outcome series from its first
// observation, so rate() and alerts see the first denial or failure.
//
// The store call metrics come from [Collector.ObserveStoreCall], which the
// middleware calls on an observer that implements
// [sluice.StoreCallObserver]. An observer that forwards to a Collector (to
// feed other sinks as well) must forward ObserveStoreCall too.
//
// # Cardinality
//
// Label values are rule names (and bypass entry names), outcomes, error
// kinds, breaker states and store endpoints, never keys, identities or
// client addresses: a [sluice.Decision] carries none, and the collector
// never reads an error's message. A collector labels at most
// [Config.MaxRules] distinct rule names (default 1000) and counts any
// further name under [OtherRule]. Series are never deleted.
//
// # Cost
//
// Observe runs for every rule of every request. After a rule's first
// observation it is a lock-free map lookup and an atomic add: no locks, no
// allocations. ObserveStoreCall is one histogram observation, plus, for a
// failed call, the classification of its error; neither allocates.
package metrics
