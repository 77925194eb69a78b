// Package redisstore is the Redis [sluice.Store]: every hit of a request is
// decided by one Lua script, atomically, on the Redis server's clock.
//
// # Decisions
//
// One EVALSHA carries all of a request's hits. The script reads and validates
// every key first, decides, and writes only if the request is admitted, so an
// error part-way (a key of the wrong type, out of memory) leaves nothing half
// applied. It reads the time with redis.call('TIME'), so clock skew between
// application nodes cannot change a limit. Arithmetic is integer
// microseconds, kept below 2^53 so Lua's doubles are exact; the in-process
// store computes the same integers, so both give identical answers.
//
// When Redis has lost the script (a restart, a failover, SCRIPT FLUSH), the
// store reloads it transparently with one EVAL: Redis did not run the script,
// so this cannot consume twice.
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
// anew (under limits that refill in milliseconds, keys recreated on every
// request kept Redis's expiry cycle busy and raised every client's p99).
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
