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
// [Config.Events]) and logs it as a warning, once per key found, naming the
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
// go-redis re-sends a command after a timeout or a reset (measured: one
// request ran the script four times with the default MaxRetries), and it
// ignores context deadlines on socket I/O unless ContextTimeoutEnabled is
// set. Either would break a limiter, so [New] refuses a client with
// MaxRetries other than -1 or with ContextTimeoutEnabled off, unless
// [Config.AllowUnsafeClient] is set. A correct client:
//
//	rdb := redis.NewClient(&redis.Options{
//		Addr:                  "127.0.0.1:6379",
//		MaxRetries:            -1,   // never re-run a script that may have run
//		ContextTimeoutEnabled: true, // honour the latency budget
//		DialTimeout:           100 * time.Millisecond,
//		ReadTimeout:           100 * time.Millisecond,
//		WriteTimeout:          100 * time.Millisecond,
//		PoolTimeout:           50 * time.Millisecond,
//		DialerRetries:         1,
//		MinIdleConns:          8, // a timeout closes a connection: keep warm ones
//	})
//
// A single node and a Sentinel-managed primary ([redis.NewFailoverClient])
// are supported. Redis Cluster and Ring clients are refused for now: one
// script must see all of a request's keys.
//
// # Redis versions
//
// Redis 6.0 and newer: CI runs the package's tests against 7.0 and 6.0.
// The store warns, through [Config.Logger], when the server's
// maxmemory-policy can evict its keys: an evicted bucket forgets what it
// consumed. Use noeviction, or give the limiter a Redis of its own.
package redisstore
