// Package sluiceotel records sluice's metrics as OpenTelemetry
// instruments: the same measurements the Prometheus collector of the
// metrics package exports, named by OpenTelemetry's semantic conventions.
//
//	import sluiceotel "github.com/sluicehq/sluice/otel"
//
//	rec, err := sluiceotel.New(otel.GetMeterProvider())
//	if err != nil { ... }
//	store, err := redisstore.New(client, redisstore.Config{Events: rec})
//	limiter, err := middleware.New(store, set) // observed by rec
//
// A [Recorder] is attached through the same single hook as the metrics
// package's Collector: the Redis store's Config.Events. The store is then
// a [sluice.ObserverSource], so the HTTP middleware, the gRPC
// interceptors and the Envoy service on it, or on a lease store wrapping
// it, report their decisions and store calls to the recorder too, and the
// store reports its breaker (from its start), script reloads, healed keys
// and eviction policy. Over the in-process
// store, give it to the middleware (decide.WithObserver) and to
// memstore.Config.Events; for a lease store's own instruments, as
// lease.Config.Observer. To feed the Prometheus collector as well,
// combine them with [sluice.Observers](rec, collector).
//
// # Instruments
//
// Every instrument comes from the meter of scope [ScopeName]:
//
//	sluice.decisions              counter  {decision}  sluice.rule, sluice.outcome
//	    One per rule per request; sluice.outcome is the Outcome's String:
//	    allowed, denied, shadow_denied, failed_open, failed_closed, local,
//	    bypassed or blocked ("unknown" for a value out of range).
//	sluice.refusals.remembered    counter  {refusal}   sluice.rule
//	    Denials a store answered in process from its memory of an earlier
//	    refusal, with no store call (sluice.Result.Remembered); counted in
//	    sluice.decisions too.
//	sluice.penalties.started      counter  {block}     sluice.rule
//	    Blocks a rule's penalty started (sluice.Result.BlockStarted): each
//	    block's refusals count under sluice.outcome=blocked.
//	sluice.store.call.duration    histogram  s         error.type (failed calls only)
//	    One per store call (per request, not per rule). Default
//	    boundaries: DefaultBuckets, 50 µs to 1 s.
//	sluice.store.errors           counter  {error}     error.type, sluice.store.ambiguous
//	    Failed store calls; error.type is ErrorType's answer, ambiguous
//	    true when the call may have been applied (sluice.IsAmbiguous).
//	sluice.breaker.state          gauge    1           sluice.store.endpoint, sluice.breaker.state
//	    1 for an endpoint's current state (closed, open, half_open), 0 for
//	    the others; from the breaker's start.
//	sluice.breaker.transitions    counter  {transition}  sluice.store.endpoint, sluice.breaker.from, sluice.breaker.to
//	sluice.store.script.reloads   counter  {reload}    sluice.store.endpoint
//	sluice.store.heals            counter  {key}       sluice.store.endpoint
//	    Bucket keys found holding something that is not a bucket's state,
//	    replaced with an empty bucket.
//	sluice.store.evicting         gauge    1           sluice.store.endpoint, sluice.store.eviction_policy
//	    1 when the endpoint's eviction policy can evict rate-limit keys, 0
//	    when it cannot, -1 when it refuses to tell (policy "unknown").
//	sluice.memstore.evictions     counter  {bucket}
//	    Buckets the in-process store evicted at its bound.
//	sluice.resets                 counter  {bucket}    sluice.rule
//	    Buckets an operator reset (rules/admin).
//	sluice.request_limits         counter  {limit}     sluice.rule, sluice.request_limit.action
//	    Limits requests set with sluice.WithLimit that a rule capped or
//	    ignored (capped, unknown_rule, invalid).
//	sluice.lease.refills          counter  {refill}    sluice.rule
//	sluice.lease.tokens.refilled  counter  {token}     sluice.rule
//	sluice.lease.tokens.returned  counter  {token}     sluice.rule
//	sluice.lease.tokens.lost      counter  {token}     sluice.rule
//	sluice.lease.refund_failures  counter  {refund}    sluice.rule
//	sluice.lease.keys             gauge    {key}
//	sluice.hot_keys               updowncounter  {key}  sluice.rule
//	sluice.hot_key.transitions    counter  {transition}  sluice.rule, sluice.hot_key.handling, sluice.hot_key.state
//
// Through OpenTelemetry's Prometheus exporter, sluice.decisions becomes
// sluice_decisions_total and sluice.store.call.duration
// sluice_store_call_duration_seconds, as the metrics package names them.
// Otherwise the two differ: the breaker is one point per state (1 for the
// current one), not one gauge of the state's number; a store call's
// outcome is error.type, present on failures only, rather than
// result="ok" or "error"; and an error that is none of sluice's kinds is
// "_OTHER", not "other".
//
// # Spans
//
// When a refused request's context carries a recording span (an HTTP or
// gRPC server span of OpenTelemetry's instrumentation), the recorder adds
// to it the event sluice.refused, once per rule that refused the request,
// with sluice.rule, sluice.outcome and sluice.retry_after in seconds (see
// [Recorder.Observe] and [WithoutSpanEvents]).
//
// # Cardinality
//
// Attribute values are rule names (and bypass entry names), outcomes,
// error types, breaker states, eviction policies and store endpoints:
// never keys, identities, API keys or client addresses. A recorder
// records at most [DefaultMaxRules] distinct rule names (see
// [WithMaxRules]) and the decisions of any further name under
// [OtherRule].
//
// # Cost
//
// Observe runs for every rule of every request. After a rule's first
// decision it takes no lock and builds no attributes: the attribute sets
// of each rule and outcome are made once.
package sluiceotel
