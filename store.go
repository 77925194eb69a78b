package sluice

import "context"

// Store decides batches of hits. Implementations are safe for concurrent
// use.
//
// Take decides hits, all of one request's rules, in one call and writes one
// Result per hit into out[i]. The request is admitted if and only if every
// enforcing (non-shadow) hit passes. If it is not admitted, nothing is
// consumed. If it is admitted, every enforcing hit consumes its cost and a
// shadow hit consumes only if it passed on its own. Every hit's Result is
// reported either way; for a hit that passed inside a request that was not
// admitted, Remaining is what is left without consuming.
//
// out must have at least len(hits) elements. A hit's cost of 0 means 1. A
// peek ([Hit.Peek]) reports without consuming and never blocks the
// request; a partial hit ([Hit.MinCost]) takes what is there, up to its
// cost. A negative cost, an unknown algorithm or an invalid limit is an
// error wrapping [ErrInvalidHit] or [ErrInvalidLimit].
// Being over the limit is never an error. A failure of the store itself is a
// [*StoreError]; when it is ambiguous the hits may have been consumed.
// Take fails as a whole: a store whose hits can fail apart (such as the
// Redis store on Redis Cluster, one hash slot down) gives back what the
// other hits took and returns the failure; it may also implement
// [PartialTaker], whose TakePartial keeps the other hits' decisions and
// returns a [*PartialError] naming the failed hits.
//
// A forced hit ([Hit.Force]) consumes whether or not it passes and does
// not take part in admission.
//
// Each Store documents whether Take is atomic: whether concurrent calls
// (from this process or, for shared stores, from any process) behave as if
// they ran one after another.
type Store interface {
	// Take decides hits as one request and writes each one's Result to
	// out, as described above.
	Take(ctx context.Context, hits []Hit, out []Result) error
}

// InProcessStore is an optional interface of a [Store] that decides in
// process, without I/O, such as the memory store. The middleware gives the
// calls of a store whose InProcess returns true no latency budget: there is
// nothing for a deadline to bound. A wrapper answers for what it wraps.
type InProcessStore interface {
	Store
	// InProcess reports whether the store decides without I/O.
	InProcess() bool
}

// InstanceCounter is an optional interface of a [Store] shared by several
// processes, such as the Redis store: it counts the instances that share
// its buckets. The middleware divides a rule's limit by the count for its
// local fallback (rules.FailLocal), and the lease store sizes its leases
// by it, unless told the number.
type InstanceCounter interface {
	// Instances returns how many instances share the store, this one
	// included; 0 when not known (yet).
	Instances() int
}

// LocalStore is an optional interface of a [Store] that can often decide
// in process although it may do I/O, such as a store of local leases.
// TakeLocal decides hits as Take would, with no I/O and no context, when it
// can, and reports true; false means it decided and consumed nothing, and
// the caller must call Take. The middleware tries TakeLocal first, so a
// request decided in process pays for no latency budget.
type LocalStore interface {
	Store
	// TakeLocal decides hits in process if it can, as described above.
	TakeLocal(hits []Hit, out []Result) bool
}

// Admitted reports whether a request whose hits were decided into results is
// admitted: whether every enforcing hit passed. Forced hits and peeks do
// not count.
func Admitted(hits []Hit, results []Result) bool {
	for i := range hits {
		if h := &hits[i]; !h.Shadow && !h.Force && !h.Peek && !results[i].Allowed {
			return false
		}
	}
	return true
}
