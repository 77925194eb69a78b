// Package memstore is the in-process [sluice.Store]: every algorithm, in
// memory, one lock per bucket and lock-free lookups, so parallel callers on
// different keys never wait for each other, with expired buckets swept in
// the background.
//
// It is the embedded default: right for tests, development, single-instance
// services, and as the local fallback when Redis fails. Limits are per
// process: N instances of a service each allow the full limit.
//
// # Atomicity
//
// [Store.Take] is atomic within the process: it locks every bucket a call
// touches (in a fixed order, so calls cannot deadlock), decides every hit,
// and writes only if the request is admitted. Concurrent calls behave as if
// they ran one after another.
//
// # Keys
//
// Keys are compared byte for byte. A key longer than 128 bytes is stored as
// its SHA-256 digest, so a client that sends huge identities cannot make one
// bucket cost more than a short one; digests are kept apart from short keys,
// so they cannot collide with them.
package memstore
