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
// # Keys
//
// Keys are compared byte for byte. A key longer than 128 bytes is stored as
// its SHA-256 digest, so a client that sends huge identities cannot make one
// bucket cost more than a short one; digests are kept apart from short keys,
// so they cannot collide with them.
package memstore
