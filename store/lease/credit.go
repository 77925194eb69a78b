package lease

// credit is how a dry token bucket is decided when this process is the
// only instance sharing it (Instances is 1): from the bucket as the
// backing store last described it, refilled at its rate since, less what
// this process admitted since. Alone, that is the bucket itself, so every
// answer is the one the backing store would give, to the microsecond,
// with no call; what it admitted is owed, and taken from the backing store
// (settled) in one forced take once half a lease is owed, when the model
// expires, on Sweep and on Close. So an instance alone flat out on a spent
// key costs one call per K/2 admitted checks, whatever it is offered.
//
// The model lives a lease's TTL from the answer it started from; then
// what it owes is settled and the answer starts it again, or, owing
// nothing, it ends and the next hit asks the backing store. At most K is
// owed (a call waits for a settle in flight rather than owe more), so a
// crash leaves the bucket at most K fuller than it should be, the bound of
// leases; a settle that fails leaves the tokens owed, for the next one. A
// reset through this store drops the model; the instance count changing
// from 1 settles and ends it.
type credit struct {
	anchored int64 // µs: when the backing store last said when the bucket is full; 0: no model
	tat      int64 // µs: the bucket's theoretical arrival time as this process knows it, owed tokens included
	owed     int64 // tokens admitted in process and not taken from the backing store yet
	since    int64 // µs: when the oldest owed token was admitted
}
