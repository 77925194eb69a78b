// Package lease is a [sluice.Store] that serves hot buckets in process:
// it takes up to K tokens of a bucket from a shared store (Redis, in
// practice) in one call, spends them locally with no I/O, and goes back
// for more when they run out or the lease expires. Unused tokens go back
// to the shared store when a lease expires and on [Store.Close].
//
// # What is leased
//
// A hit is leased when its rule's policy ([sluice.Hit.Lease], or
// [Config.Default]) is enabled, or when its key is hot and the policy
// escalates hot keys to leases. Only token bucket and fixed window buckets
// are leased (see [MaxLease] for why); sliding window and sliding log,
// peeks, shadow hits, forced charges and partial hits pass through. The
// backing store must implement [sluice.Refunder]; over any other store
// every hit passes through.
//
// # Lease size and drift
//
// K, the most one refill takes, adapts per key: a key seen once takes only
// its cost, and K doubles each time a lease runs out within half its TTL
// and halves when one expires unused or a fixed window's refill finds it
// dry, up to the bound of [MaxLease], Config.MaxLease and the policy's
// MaxLease. N instances together admit at most N × K beyond the limit;
// what drift, a crash and a failing store cost in operation is in
// docs/operations.md of the repository.
//
// # Over the limit
//
// A token bucket whose refills keep finding it dry (four in a row) is
// saturated, and is refilled in chunks worth the wait rather than a token
// at a time; one that runs dry now and then is decided exactly. After a
// dry refill the instance waits until the bucket has refilled a cycle's
// tokens (K, or what refills over the lease's TTL when less), as of what
// the backing store said, then asks for up to K and at least its share of
// them, a chunk (the cycle's tokens divided by the instances, rounded up);
// when less than a chunk is there, it waits exactly until a chunk is, as
// the store's refusal says. With several instances every refill that
// leaves the bucket with less than a chunk waits its cycle, so each takes
// at most K a cycle. Instances flat out on one key so share
// its rate evenly at about N / K backing calls per admitted check, and an
// instance alone takes K a call. Meanwhile the checks its lease cannot
// serve are refused in process. Tokens that refill while instances wait
// stay in the bucket for the next refill, and every token served was
// taken from the backing store first: the drift bound is unchanged.
//
// # Answers under a lease
//
// A hit served from a lease reports, in its Result:
//   - Remaining: the tokens this process holds plus what the shared bucket
//     held at the last refill; for a token bucket, refilled at its rate
//     since, as this process alone would see it. It does not see other
//     instances' takes since the refill: it is this process's view, exact
//     for one instance and an upper bound otherwise (by at most what the
//     others took since).
//   - ResetAfter: when the shared bucket is full again as of the last
//     refill, counting the held tokens as back in it.
//   - RetryAfter (refusals): a refusal comes from the shared store (its
//     exact Retry-After for the cost beyond what the lease holds), or from
//     the remembered refusal of the same cost, whose Retry-After counts
//     down to the same instant. A saturated key's refusal while its lease
//     waits for its next refill (see Over the limit) says when that refill
//     is sent: when this instance admits again, up to a cycle later than
//     the bucket alone would let a single check pass. With several
//     instances, another instance's return can make a request pass sooner.
//   - Remembered refusals: a call answered from the memory of refusals
//     reports, for its other hits, what the store knows of their buckets
//     without a backing call (see [sluice.Result.Remembered]): the lower
//     of what it last answered for the bucket and what the key's lease
//     holds plus what the backing bucket held at its last refill, both
//     counted forward. The same seeds a local fallback
//     ([Store.ClaimBucket]). A call refused in process by a lease's
//     remembered denial, with no backing call, is marked Remembered too,
//     its other hits undecided (over a backing store behind a network).
//
// The 429 body and headers are written from these values as from any
// store's, so their shape does not change.
//
// # Hot keys
//
// A policy with HotKeys.Threshold counts, per rule, the shared-store
// traffic of each key, and the checks refused in process from a remembered
// refusal or a lease's denial (so a key flooded over its limit turns hot
// too), weighted by the tokens each stands for, in a
// count-min sketch of one-second windows with the top keys (Config.TopK)
// tracked exactly: memory per rule is fixed however many keys pass.
// A key at or over the threshold in a window is hot until a whole window
// passes under it. A hot key is leased (HotKeys.Lease) and/or split
// (HotKeys.Split = N): each request uses one of N sub-buckets in turn,
// each with the rate and capacity divided by N (rounded down). A limit
// whose rate or capacity is below N is not split (sub-buckets of at least
// 1 each would multiply it); the rules package refuses such a rule.
//
// Splitting spreads a key over N shared-store keys (on Redis Cluster, N
// slots), at a cost in accuracy: a request is refused when its
// sub-bucket is empty even if another has tokens, so a client can be
// refused with up to (N−1)/N of the capacity left, and a burst is capped
// at capacity/N per request; the rounding down can lose up to N−1 of
// rate and capacity; when a key turns hot its sub-buckets start full, so
// the transition can admit up to one more capacity; and a split hit's
// Result describes its sub-bucket (the sub-limit, its Remaining) and has
// no receipt, so it cannot be refunded. A peek of a split key (what an
// operator's inspection reads) reports its own bucket, which the key does
// not consume while it is split: not the sub-buckets' state. Reset resets
// the bucket and its sub-buckets. When a rule both leases and splits
// hot keys, leasable buckets are leased and the others split.
//
// # Configuration from rules
//
// The rules package points each hit's [sluice.Hit.Lease] at its rule's
// policy (Rule.Lease; the `lease:` and `hot_keys:` blocks of a rule
// file), so wrapping the store is the only other step:
//
//	store, err := lease.New(redisStore, lease.Config{Instances: 4})
//
// # Metrics
//
// The lease store passes on the backing store's observer
// ([Store.Observer]): a collector set as the Redis store's Config.Events
// counts the decisions and store calls of a middleware on the lease store
// as it does on the Redis store alone. Config.Observer receives the lease
// store's own events (refills, give-backs, hot keys).
package lease
