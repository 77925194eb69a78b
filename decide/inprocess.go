package decide

import (
	"net/http"

	"github.com/sluicehq/sluice/rules"
)

// CheckInProcess is [Decider.Check] for a caller that must not wait for
// I/O, such as a gRPC tap handle running on a connection's reader: it
// decides r only if it can without a store call, and returns nil
// otherwise, having consumed, reported and logged nothing, so that the
// caller leaves r to Check. It decides r when the store decides in
// process ([sluice.InProcessStore], such as memstore's), when the store's
// TakeLocal can ([sluice.LocalStore], such as a lease store's local
// tokens and remembered refusals), or when r matches no rule; it returns
// nil for a store that can do neither, and for a request a rule cannot
// key (Check decides and reports it). [CanDecideInProcess] says whether
// a store can ever decide in process.
func (dc *Decider) CheckInProcess(set *rules.Set, r *http.Request) *Outcome {
	if dc.calls != nil && dc.inproc == nil {
		return nil
	}
	o := dc.pool.Get().(*Outcome)
	o.Matched = &o.own
	if err := set.Resolve(r, o.Matched); err != nil {
		o.reset(nil)
		dc.pool.Put(o)
		return nil
	}
	o.inProcessOnly = true
	dc.decide(r.Context(), o, nil)
	o.inProcessOnly = false
	if o.undecided {
		o.undecided = false
		dc.pool.Put(o)
		return nil
	}
	return o
}

// CanDecideInProcess reports whether the decider's store can decide a
// request in process ([Decider.CheckInProcess]): it decides in process,
// or it has local tokens to try.
func (dc *Decider) CanDecideInProcess() bool { return dc.calls == nil || dc.inproc != nil }
