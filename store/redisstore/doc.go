// Package redisstore is the Redis [sluice.Store]: every hit of a request is
// decided by one Lua script, atomically, on the Redis server's clock.
//
//	client, err := redisstore.NewClient("localhost:6379")
//	store, err := redisstore.New(client, redisstore.Config{Secret: secret})
//	defer store.Close(ctx)
//
// # Decisions
//
// One EVALSHA carries all of a request's hits (with [Config.Coalesce], on by
// default, those of several concurrent requests, each decided on its own).
// The script reads every key first and writes only what admitted requests
// consumed, so an error part-way leaves nothing half applied; it reads the
// time with TIME, so clock skew between nodes cannot change a limit. It
// computes in integer microseconds below 2^53, the in-process store's
// integers, so both give identical answers. The store is also a
// [sluice.Refunder], [sluice.Resetter], [sluice.PartialTaker] and
// [sluice.InstanceCounter]. A bucket it refused is refused again from
// memory, with no call, until it could pass ([Config.RememberRefusals]).
//
// # Keys
//
// A bucket's key is a prefix, a hash tag and the algorithm with an encoding
// version:
//
//	sl:{9zvH0c4rDp1Rx2Vw}:tb1
//
// The hash tag is a keyed hash (HMAC-SHA-256 with [Config.Secret], 96 bits)
// of the rule's name, key kind and identity: a Redis dump shows no address
// or API key, keys have a fixed length, and no client input can pick a
// cluster slot or reach another bucket. Every write sets a TTL: the time
// until the bucket is full again, at least one second. A key holding
// something else is read as an empty bucket and replaced, counted
// ([sluice.StateHealedEvents]) and logged.
//
// # Clients
//
// [NewClient] returns a client with every setting the store needs: a
// single node from an address or a URL, a Redis Cluster from several
// addresses or a URL with addr parameters, a Sentinel-managed primary from
// a URL with master_name; [NewClusterClient] and [NewFailoverClient] take a
// cluster known by one address and a Sentinel master. A client built by
// hand needs MaxRetries -1, ContextTimeoutEnabled and Protocol 2 on a
// single node; MaxRetries -1 and ContextTimeoutEnabled from
// [redis.NewFailoverClient]; ContextTimeoutEnabled from
// [redis.NewClusterClient]. [New] refuses a client that could apply a
// request twice or ignore its deadline, naming the field (unless
// [Config.AllowUnsafeClient]), and Ring and FailoverClusterClient clients.
// A script that may have run is never sent again.
//
// The store keeps [Config.Conns] connections ready, so a request never
// dials within its budget; each endpoint (Cluster master, Sentinel
// primary) has its own circuit breaker ([BreakerConfig]). On Redis Cluster
// a request's hits in several slots go in one pipeline, or the scarcest
// slot first while a bucket is low or two could run out, and stay
// all-or-nothing through exact refunds; [Store.TakePartial] names the hits
// of failed slots, so only their rules fall to on_fail. How the store
// connects, re-sends, heals and fails over: docs/operations.md in the
// repository.
//
// # Managed Redis
//
// The store needs no administrative command. Its ACL user needs its keys
// (~sl:* with the default prefix) and the commands it sends, those its
// scripts call included:
//
//	ACL SETUSER sluice on >PASSWORD resetkeys ~sl:* -@all +evalsha +eval +script|load +ping +time +get +set +mget +exists +del +zadd +zrem +zrangebyscore +zremrangebyscore +pexpire +zcard
//
// and on Redis Cluster +cluster|slots and +asking. A call Redis refuses for
// want of a permission fails with an error wrapping [ErrNoPermission] and
// [sluice.ErrInvalidConfig] that names it, which no breaker counts.
//
// Redis 6.0 and newer. Use maxmemory-policy noeviction: the store warns
// when a server can evict its keys, which an evicted bucket forgets.
package redisstore
