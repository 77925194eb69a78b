// Package redisstore is the Redis [sluice.Store]: every hit of a request is
// decided by one Lua script, atomically, on the Redis server's clock.
//
// # Decisions
//
// One EVALSHA carries all of a request's hits (with [Config.Coalesce], the
// hits of several requests, each decided on its own). The script reads every
// key first, decides, and writes only what admitted requests consumed, at the
// end, so an error part-way (out of memory) leaves nothing half applied. It
// reads the time with redis.call('TIME'), so clock skew between application
// nodes cannot change a limit. Arithmetic is integer
// microseconds, kept below 2^53 so Lua's doubles are exact; the in-process
// store computes the same integers, so both give identical answers.
//
// When Redis has lost the script (a restart, a failover, SCRIPT FLUSH), the
// store reloads it transparently with one EVAL: Redis did not run the script,
// so this cannot consume twice.
//
// Every hit that consumed gets a receipt ([sluice.Receipt]), and the store is
// a [sluice.Refunder]: Refund gives back what hits took, in one call of a
// second script, by the rules of the in-process store (a token bucket gets
// back at most what the take still holds, a window only while the take's
// window still counts, a sliding log shrinks the entry the take added). A
// refund is never retried. It is a [sluice.Resetter] too: Reset deletes the
// buckets' keys.
//
// # State that heals
//
// A bucket key holding something that is not a bucket's state (a key of
// another type, a value or a log entry that does not parse) is read as an
// empty bucket and replaced by the check that finds it: deleted, then
// written as any bucket is if the check consumed. The store counts it
// ([sluice.StateHealedEvents], which the metrics package implements, through
// [Config.Events]) each time, and logs a warning the first time it heals each
// key (it remembers 1,024 keys; past that every heal is logged), naming the
// key as stored, which holds no identity.
//
// # Keys
//
// A bucket's Redis key is a fixed prefix, a hash tag, and the algorithm with
// an encoding version:
//
//	sl:{9zvH0c4rDp1Rx2Vw}:tb1
//
// The hash tag is a keyed hash (HMAC-SHA-256 with [Config.Secret], 96 bits)
// of the hit's key, which the rules package builds from the rule's name, the
// key kind and the identity. So a Redis dump shows no IP address or API key,
// keys have a fixed length whatever the client sends, and no client input can
// pick a cluster slot or collide with another bucket. Every write sets a TTL:
// the time until the bucket is full again, when its state is
// indistinguishable from a bucket never used, and at least one second, so a
// client that returns within a second finds its key rather than creating it
// anew (keys recreated on every request keep Redis's expiry cycle busy).
//
// # Client settings
//
// go-redis re-sends a command after a timeout or a reset (with the default
// MaxRetries, one request's script can run several times), and it
// ignores context deadlines on socket I/O unless ContextTimeoutEnabled is
// set. Either would break a limiter, so [New] refuses a client with
// MaxRetries other than -1 or with ContextTimeoutEnabled off, naming each
// field, unless [Config.AllowUnsafeClient] is set. [NewClient] returns a
// client with every setting the store needs for the topology its
// addresses name: a single node from an address or a URL, a Redis Cluster
// from several addresses or a URL with addr parameters, a Sentinel-managed
// primary from a URL with a master_name parameter:
//
//	rdb, err := redisstore.NewClient("redis://127.0.0.1:6379/0")
//	rdb, err := redisstore.NewClient("10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000")
//
// [NewClusterClient] takes a Redis Cluster known by one address,
// [NewFailoverClient] a Sentinel master's name and the Sentinels'
// addresses. [ClientOptions], [ClusterOptions] and [FailoverOptions]
// return their options, to adjust before go-redis's constructors.
//
// A client built by hand needs, on a single node, MaxRetries -1,
// ContextTimeoutEnabled and Protocol 2 (see Connections); from
// [redis.NewFailoverClient], MaxRetries -1 and ContextTimeoutEnabled; from
// [redis.NewClusterClient], ContextTimeoutEnabled.
//
// # Connections
//
// A request's budget covers its command, never a connection's set-up.
// go-redis sets a connection up (HELLO, and with its default options
// CLIENT SETINFO and CLIENT MAINT_NOTIFICATIONS) on its first use, under the
// context of the command that uses it, and closes a connection whose
// command timed out. So the store keeps [Config.Conns] ready connections of
// its own, taken from the client's pool and set up in the background
// (handshake done, then a PING with the store's scripts loaded, so that a
// fresh or restarted server does not answer the first calls NOSCRIPT): at
// start, after a connection fails, and whenever one is missing. A request
// waits, within its budget, for a ready connection, and never dials or
// shakes hands; while Redis cannot be reached, a request that finds no
// ready connection fails at once. A request that waited, and has no more
// time left than a round trip takes (a moving average of the commands on
// the ready connections, seeded by their set-up), fails then without being
// sent: unambiguously, with [sluice.ErrTimeout], and without counting
// towards the breaker, as it would if it were sent and timed out. So a
// fresh store's first requests, made before its first connection is ready
// (two round trips), fail at once if they cannot be answered in time,
// without opening the breaker.
//
// A connection the server closed or reset (a restart, a crash) makes the
// store replace its idle ones too, and dial the endpoint before it sets up
// another: until that dial tells, requests that find no ready connection
// fail at once, unambiguously, with [sluice.ErrUnavailable], without
// counting towards the breaker (a server that closed its connections may
// be up); once it fails, they fail at once and count. So a Redis, or a
// Sentinel-managed primary, killed under load fails its requests at once
// from the first one that meets a closed connection, never after waiting
// their budget for a connection that cannot be set up. Decisions resume as
// soon as a connection is set up again (and, when the breaker opened, its
// probe succeeded). The circuit breaker's probe also runs in the
// background (see [BreakerConfig]). This needs a [*redis.Client] whose
// handshake cannot change its shared options (Protocol 2, or maintenance
// notifications off, as [NewClient] sets); with another client the store
// uses the client's pool, and logs so at start. Events, logs and metrics
// name a Sentinel-managed primary by its current address; each primary
// has its own breaker, which the failures of the one before it never
// open: once the Sentinels name a new primary, requests fail at once,
// uncounted, until its connections are set up, and then decide.
//
// # Re-sends
//
// Exactly these re-sends can happen, whatever the client: a script command
// Redis answered NOSCRIPT is sent once more with the script's source (Redis
// did not run it); a command go-redis could not write to any connection
// (a dial error, a pool timeout, a new connection's handshake timing out, a
// connection found broken before writing) may be tried on another, on
// Cluster up to MaxRedirects more times, so a call whose context has no
// deadline can wait, attempt after attempt, for a master that is busy and
// then succeed (give every call the request's deadline); on Redis Cluster, a command answered MOVED or ASK
// is sent to the node named (Redis did not run it), and one answered
// READONLY (sent to a former master) goes to the slot's master after the
// slot map is reloaded. A command that may have reached Redis and run is
// never sent again: the store's script commands tell go-redis so (their
// NoRetry is true), which go-redis honours for single commands and
// pipelines, on every client, even where MaxRetries or, on Cluster,
// MaxRedirects would re-send after a timeout or an EOF. Such a failure is
// returned as an ambiguous [*sluice.StoreError].
//
// # Sentinel and Cluster
//
// A single node, a Sentinel-managed primary ([redis.NewFailoverClient]) and
// Redis Cluster ([redis.NewClusterClient], or a [redis.UniversalClient] that
// is one) are supported. For a cluster client [New] requires only
// ContextTimeoutEnabled: its retries cannot re-send scripts. A Ring, which
// spreads keys over shards it never fails over, and
// [redis.NewFailoverClusterClient], built to read from replicas, are
// refused. The start-up check reports a Redis Cluster node behind a client
// that is not a cluster client (such as a wrapper type around one): every
// call then fails with an error wrapping [ErrUnsupportedClient], which no
// breaker counts.
//
// On Redis Cluster the atomic unit is the hash slot: Redis refuses a script
// over keys of two slots, even on one node. Take groups a request's hits by
// slot and decides each group with one script call, sending the calls for
// all the groups in one pipeline, one per node, the nodes concurrently.
// When a slot refuses the request, what the other slots took is given back
// by exact refunds ([sluice.Refunder]'s rules) and their hits decided again
// as a refused request, in one more round trip, before Take returns: the
// results are a single node's. A refund is never retried: a failed one is
// counted and logged, and loses at most its request's cost (the buckets
// under-admit until they refill; nothing over-admits). Refunds go out under
// the request's context, so that Take never outlasts its budget: when a
// failing slot used up the deadline, the others' refunds fail that way.
// When some slots fail
// (CLUSTERDOWN, TRYAGAIN after its retries, a master that does not answer,
// its breaker open) and the others are decided, Take gives back what the
// decided slots took and fails as a whole; [Store.TakePartial], which the
// middleware calls, keeps their decisions and names the failed hits in a
// [*sluice.PartialError], so only the rules of the failed slots go to their
// on_fail (see [sluice.PartialTaker]). Hits of one
// [sluice.Hit.Group] share a hash tag, so a request's colocated hits stay
// one script call. Coalescing, on by default here too, batches per slot:
// each slot has its own lanes and queue, and a request whose hits lie in
// several slots sends each slot's group through that slot's lanes, the
// slots side by side (the groups that find a free lane in one pipeline,
// the others in their slots' next calls), with the same refunds when one
// refuses. The circuit breaker is per
// master, and events, logs and metrics name each master by its address.
// A master found unreachable (a dial to it refused or failed, whether a
// call's or go-redis's own) fails the calls for its slots at once,
// unsent, with [sluice.ErrUnavailable], unambiguously, until a dial in the
// background reaches it again; a connection it closed or reset makes it
// suspect, and its calls fail at once, uncounted by the breaker, until
// that dial, made at once, tells. Only the calls already inside go-redis
// when it went (dialling it, or a pipeline waiting to send to it again)
// can wait their budget. Failed calls (dial errors, timeouts,
// CLUSTERDOWN, an open breaker) make go-redis reload the slot map, at most
// one reload at a time, 200 ms apart, so the slots of a dead master follow
// its promoted replica within about a round trip of the promotion. Set
// cluster-require-full-coverage no on the servers, so the other masters keep
// answering while a slot has no master. Writes the dead master had not
// replicated are lost: each of its buckets forgets at most the replication
// lag's worth of its admitted rate.
//
// # Managed Redis
//
// The store needs no administrative command. Its ACL user needs its keys
// (~sl:* with the default prefix) and the commands it sends, those its
// scripts call included:
//
//	ACL SETUSER sluice on >PASSWORD resetkeys ~sl:* -@all +evalsha +eval +script|load +ping +time +get +set +mget +exists +del +zadd +zrem +zrangebyscore +zremrangebyscore +pexpire +zcard
//
// and on Redis Cluster +cluster|slots and +asking; +config|get lets it
// check the eviction policy, +info find a Redis Cluster node behind a
// single-node client. A call Redis refuses for want of a permission fails
// with an error wrapping [ErrNoPermission] and [sluice.ErrInvalidConfig]
// that names the permission, which no circuit breaker counts. Without
// CONFIG (renamed away, or refused to the user) the eviction-policy check
// says once, at info level, that it cannot read the policy, and reports it
// to [sluice.EvictionPolicyEvents] as unknown (an empty policy).
//
// # Redis versions
//
// Redis 6.0 and newer: CI runs the package's tests against 7.0 and 6.0.
// The store warns, through [Config.Logger], when the server's
// maxmemory-policy can evict its keys: an evicted bucket forgets what it
// consumed. Use noeviction, or give the limiter a Redis of its own.
package redisstore
