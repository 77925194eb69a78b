// Package memstore is the in-process [sluice.Store]: every algorithm, in
// memory, with lock-free lookups and one lock per bucket, so parallel
// callers on different keys do not wait for each other, and expired buckets
// swept in the background (the sweeper passes over buckets in use rather
// than wait for them). A call with one token-bucket hit on a known key, the
// most common, takes no lock at all: it decides with a compare-and-swap of
// the bucket's one number. Creating a key takes a lock on a shard of the
// key space, briefly.
//
// It is the embedded default: right for tests, development, single-instance
// services, and as the local fallback when Redis fails. Limits are per
// process: N instances of a service each allow the full limit.
//
// # Atomicity
//
// [Store.Take] is atomic within the process: a call with several hits
// locks every bucket it touches (in a fixed order, so calls cannot
// deadlock), decides every hit, and writes only if the request is
// admitted; a call with one token-bucket hit commits its decision with a
// compare-and-swap, and waits for the lock only while a call with several
// hits holds that bucket. Concurrent calls behave as if they ran one after
// another.
//
// # Refunds and reset
//
// The store implements [sluice.Refunder] and [sluice.Resetter]: every result
// that consumed carries a receipt, [Store.Refund] gives back exactly what it
// records, and [Store.Reset] makes buckets full again.
//
// # Bounded memory
//
// The store holds at most [Config.MaxBuckets] buckets (default
// [DefaultMaxBuckets]), so a flood of identities seen once (rotating IPv6
// addresses, random API keys) cannot grow it without end. A token bucket
// under a key such as the rules build costs about 150 bytes; a sliding
// log also holds one entry per request in its window, which the bound does
// not count.
//
// Buckets that are full again are forgotten by the sweeper, which passes
// over the store once per [Config.SweepInterval] in small steps. A call
// that needs a new bucket when the store is full first evicts, from one
// part of the store at a time, in turn: the buckets there that are full
// again, then the eighth of them closest to being full again.
//
// What eviction forgives: an evicted bucket is full again the next time
// its key is used, as if it had never been used. A bucket evicted before
// it was full again gives its key the tokens it would have got back by
// then, at most a whole burst; taking the buckets closest to full keeps
// that gift small, and buckets in active use are the last to go. Under a
// flood of new keys at the bound, expect the least-used identities to be
// forgiven first. [Store.Evicted] counts evictions, and [Config.Events]
// reports them (the metrics package exports them as
// sluice_memstore_evictions_total). Set MaxBuckets above the number of
// identities active within your longest period.
//
// Penalties ([sluice.Hit.Block]) keep a record beside the bucket of each
// identity blocked or counting refusals toward a block, forgotten by the
// sweeper once the block and the counting period are over, and bounded by
// MaxBuckets as well: at the bound the records that are over go first,
// then one of those that end soonest (its block forgiven early).
//
// # Keys
//
// Keys are compared byte for byte. A key longer than 128 bytes is stored as
// its SHA-256 digest, so a client that sends huge identities cannot make one
// bucket cost more than a short one; digests are kept apart from short keys,
// so they cannot collide with them.
package memstore
