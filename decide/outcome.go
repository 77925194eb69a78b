package decide

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/rules"
)

// Errors an outcome's Err wraps, beside the cause. Test with [errors.Is].
var (
	// ErrKeyFailed: a rule's key function could not key the request.
	ErrKeyFailed = errors.New("decide: cannot key request")
	// ErrStoreFailed: the store failed some or all of the request's hits,
	// and their rules applied their on_fail policies. The store's error
	// (a *sluice.StoreError or *sluice.PartialError) is wrapped too.
	ErrStoreFailed = errors.New("decide: store failed")
	// ErrInvalidCost: the request's context set a negative cost
	// (sluice.WithCost): a bug in the server, not the client.
	ErrInvalidCost = errors.New("decide: invalid request cost")
)

// Verdict is what a request's answer is.
type Verdict uint8

const (
	// Admitted: the request may go on.
	Admitted Verdict = iota
	// Refused: a rule refused the request (HTTP 429, gRPC
	// ResourceExhausted, Envoy OVER_LIMIT). Nothing was consumed.
	Refused
	// Unavailable: the store failed and a matched enforcing rule fails
	// closed (HTTP 503, gRPC Unavailable). Nothing the store decided was
	// kept. Err wraps [ErrStoreFailed].
	Unavailable
	// Invalid: the request could not be decided: a rule could not key it
	// (Err wraps [ErrKeyFailed]; HTTP 400, gRPC InvalidArgument), or its
	// context set a negative cost ([ErrInvalidCost]). Nothing was counted.
	Invalid
)

var verdictNames = [...]string{"admitted", "refused", "unavailable", "invalid"}

// String returns "admitted", "refused", "unavailable" or "invalid".
func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "Verdict(?)"
}

// Outcome is what the pipeline says of one request: [Decider.Check] and
// [Decider.Decide] return it, and a front end turns it into its answer.
// Its slices are indexed like the matched rules (Rules and Hits). It is
// reused: call [Outcome.Finish] when the request is over, and use neither
// it nor its slices after.
type Outcome struct {
	// Matched are the request's rules and the hits they asked of the
	// store.
	*rules.Matched
	// Verdict is the answer.
	Verdict Verdict
	// Results are the rules' results: the store's, or, for a rule the
	// local fallback decided, the fallback's. The zero Result for a rule
	// nobody decided (see Decided).
	Results []sluice.Result
	// Failed marks the rules whose hits the store failed: all of them
	// after a whole failure, some after a [*sluice.PartialError], none
	// when the store decided them all.
	Failed []bool
	// Local marks the failed rules the local fallback decided (their
	// on_fail is local).
	Local []bool
	// Err says what went wrong, nil when nothing did: it wraps
	// [ErrKeyFailed] or [ErrInvalidCost] for an [Invalid] request, and
	// [ErrStoreFailed] with the store's error when the store failed, even
	// if on_fail let the request through. It is for logs and error
	// handlers, never for clients.
	Err error
	// Latency is how long the store call took; 0 when none was made.
	Latency time.Duration
	// RetryAfter is how long the client should wait before it tries
	// again. For an [Unavailable] request, how long the store expects to
	// stay unavailable (a circuit breaker's remaining open time), at least
	// a second. For a [Refused] one, the longest wait among the rules
	// refusing it ([Outcome.Refusing]), exact, not rounded; 0 when one
	// never can pass (Unsatisfiable). Otherwise 0.
	RetryAfter time.Duration
	// Unsatisfiable: a rule refusing the request can never pass it, its
	// cost exceeding the rule's capacity, however long the client waits.
	Unsatisfiable bool
	// Policies are what the rate-limit fields describe: the prior
	// policies [Decider.Check] was given, then the exposed rules
	// ([rules.Rule.Exposed]) the store decided, with their results, in
	// the rules' order, each rule once. Empty unless [Outcome.Headers]
	// reports true: rules decided by their on_fail policy never appear.
	Policies []headers.Policy
	// Binding is the index in Policies of the binding policy, the one the
	// RateLimit field describes, or -1: for a request not admitted the
	// policy that refused it for longest (one that can never pass first);
	// otherwise the one closest to its limit (the fewest Remaining, then
	// the longest ResetAfter).
	Binding int
	// Fields are the header fields to send, name/value pairs: the
	// rate-limit fields of the configured modes ([WithHeaders]) that
	// describe Policies, and Retry-After for a request refused that can
	// pass later, or Unavailable.
	Fields []headers.Field

	dc       *Decider
	own      rules.Matched // Check's
	prior    []headers.Policy
	storeErr error // the store's, unwrapped: for the observer and logs
	headers  bool  // see Headers
	// inProcessOnly: decide in process or not at all (CheckInProcess);
	// undecided: it could not.
	inProcessOnly, undecided bool

	status rules.Status // how the request ended: set by Finish
	slots  *slotHolder  // refreshing the request's slots; nil when not
}

// reset makes o the undecided outcome of its matched rules, admitted.
func (o *Outcome) reset(prior []headers.Policy) {
	n := len(o.Hits)
	o.Verdict, o.Err, o.storeErr, o.Latency, o.headers = Admitted, nil, nil, 0, false
	o.RetryAfter, o.Unsatisfiable, o.prior = 0, false, prior
	o.Policies, o.Fields, o.Binding = o.Policies[:0], o.Fields[:0], -1
	if cap(o.Results) < n {
		o.Results = make([]sluice.Result, n)
	}
	o.Results = o.Results[:n]
	clear(o.Results)
	o.Failed, o.Local = falses(o.Failed, n), falses(o.Local, n)
}

// falses returns b resized to n, every element false.
func falses(b []bool, n int) []bool {
	if cap(b) < n {
		return make([]bool, n)
	}
	b = b[:n]
	clear(b)
	return b
}

// markFailed marks in o.Failed the rules of pe's failed hits and reports
// whether pe names only hits of the request.
func (o *Outcome) markFailed(pe *sluice.PartialError) bool {
	for _, i := range pe.Failed {
		if i < 0 || i >= len(o.Failed) {
			return false
		}
		o.Failed[i] = true
	}
	return true
}

// Decided reports whether rule i's result is a decision: the store's, or
// the local fallback's. A rule the store failed whose policy is open or
// closed was decided by nobody.
func (o *Outcome) Decided(i int) bool { return !o.Failed[i] || o.Local[i] }

// Refusing reports whether rule i refused the request: an enforcing rule,
// decided, whose result did not pass.
func (o *Outcome) Refusing(i int) bool {
	return o.Decided(i) && !o.Rules[i].Shadow && !o.Results[i].Allowed
}

// Headers reports whether rate-limit fields describe the request: the
// store decided some of its rules, and, when the request is not admitted,
// one of those refused it. Only the exposed rules the store decided appear
// in them (see Policies); rules decided by their on_fail policy never do.
func (o *Outcome) Headers() bool { return o.headers }

// Violated returns the exposed rules ([rules.Rule.Exposed]) that refused
// the request ([Outcome.Refusing]), in order: the policies a refusal
// names.
func (o *Outcome) Violated() iter.Seq[*rules.Rule] {
	return func(yield func(*rules.Rule) bool) {
		for i, rule := range o.Rules {
			if o.Refusing(i) && rule.Exposed() && !yield(rule) {
				return
			}
		}
	}
}

// Refuse turns an admitted outcome into a refusal by its refusing rules
// ([Outcome.Refusing]), for a protocol that refuses what the pipeline
// admits: the Envoy service refuses a request whose descriptors only check
// (hits_addend 0, peeks) when one of them finds its cost missing. Its
// retry delay and fields become a refusal's. It does nothing to an
// outcome not admitted, or one no rule refuses.
func (o *Outcome) Refuse() {
	if o.Verdict != Admitted {
		return
	}
	for i := range o.Results {
		if o.Refusing(i) {
			o.Verdict = Refused
			o.conclude()
			return
		}
	}
}

// Finish is the step that runs when the request is over, after the
// handler (even one that panicked) or the answer. status, when given (only
// the first is read), is how the request ended: an HTTP status
// ([rules.HTTPStatus]) or a gRPC code ([rules.GRPCStatus]); without it the
// end is unknown. Then, for an admitted request:
//
//   - the slots of its concurrency rules ([rules.Rule.Concurrency]) are
//     freed, whatever its end, and what the rules counting by outcome
//     ([rules.Rule.Count]) took is given back for each rule that does not
//     count status (an unknown end counts for every rule, and is logged
//     once, as a warning), together in one store call;
//   - charge more is charged to each other enforcing rule the request
//     matched, for what was known only then (middleware.Charge), in one
//     forced store call: the buckets may go into debt.
//
// Each call is under the latency budget, with ctx's values but not its
// cancellation; a failure is logged, never shown to the client. Then o is
// reused: use neither it nor its slices after.
func (o *Outcome) Finish(ctx context.Context, charge int64, status ...rules.Status) {
	dc := o.dc
	o.stopHolding()
	o.status = statusOf(status)
	if o.Matched != nil && o.Verdict == Admitted {
		if len(status) == 0 && o.Counting() {
			dc.warnUnknownEnd(ctx)
		}
		dc.giveBackEnded(context.WithoutCancel(ctx), o, len(status) > 0)
	}
	if o.Matched != nil {
		dc.local.release(o) // also of a request refused after the fallback gave it a slot
	}
	if charge > 0 && o.Matched != nil {
		dc.settle(context.WithoutCancel(ctx), o, charge)
	}
	if o.Matched != &o.own {
		o.Matched = nil // a front end's: not ours to keep
	}
	o.prior, o.storeErr, o.Err = nil, nil, nil
	dc.pool.Put(o)
}

// conclude sets o's retry delay and what its fields describe, from its
// verdict and results.
func (o *Outcome) conclude() {
	o.RetryAfter, o.Unsatisfiable = 0, false
	switch o.Verdict {
	case Unavailable:
		o.RetryAfter = time.Second
		if se, ok := errors.AsType[*sluice.StoreError](o.storeErr); ok {
			o.RetryAfter = max(o.RetryAfter, se.RetryAfter)
		}
	case Refused:
		for i := range o.Results {
			if o.Refusing(i) {
				o.RetryAfter = max(o.RetryAfter, o.Results[i].RetryAfter)
				o.Unsatisfiable = o.Unsatisfiable || o.Results[i].Unsatisfiable
			}
		}
		if o.Unsatisfiable {
			o.RetryAfter = 0
		}
	}
	o.describe()
}

// describe sets o's policies, binding policy and fields.
func (o *Outcome) describe() {
	cfg := &o.dc.cfg
	admitted := o.Verdict == Admitted
	o.Policies, o.Fields, o.Binding = o.Policies[:0], o.Fields[:0], -1
	if o.headers {
		o.Policies = append(o.Policies, o.prior...)
		own := len(o.Policies)
		for i, rule := range o.Rules {
			if !rule.Exposed() || o.Failed[i] {
				continue
			}
			if rule.Concurrency != nil && (admitted || o.Results[i].Allowed) {
				continue // slots in flight are no quota: described only when they refused
			}
			p := headers.Policy{Name: rule.Name, Result: o.Results[i]}
			if k := indexOf(o.Policies[own:], rule.Name); k >= 0 {
				// A rule met twice (two Envoy descriptors) appears once:
				// as it binds most.
				if binding([]headers.Policy{o.Policies[own+k], p}, admitted) == 1 {
					o.Policies[own+k] = p
				}
				continue
			}
			o.Policies = append(o.Policies, p)
		}
		o.Binding = binding(o.Policies, admitted)
		if cfg.headers != headers.None && o.Binding >= 0 {
			var now time.Time // read by X-RateLimit-Reset, a Unix time, and calendar windows
			if cfg.headers&headers.XRateLimit != 0 || anyCalendar(o.Policies) {
				now = cfg.now()
			}
			o.Fields = headers.AppendFields(o.Fields, cfg.headers, o.Policies, o.Binding, now)
		}
	}
	if o.Verdict == Unavailable || o.Verdict == Refused && !o.Unsatisfiable {
		o.Fields = append(o.Fields, headers.RetryAfter(o.RetryAfter))
	}
}

// indexOf returns the index of the policy named name in ps, or -1.
func indexOf(ps []headers.Policy, name string) int {
	for i := range ps {
		if ps[i].Name == name {
			return i
		}
	}
	return -1
}

// binding returns the index of the binding policy among ps, or -1 when ps
// is empty. For a request not admitted it is the policy that refused it
// for longest: one whose cost can never pass, else the longest RetryAfter
// (when none refused, they are described as for an admitted request). For
// an admitted request it is the one closest to its limit: the fewest
// Remaining, then the longest ResetAfter.
func binding(ps []headers.Policy, admitted bool) int {
	best := -1
	for i := range ps {
		if !admitted && ps[i].Result.Allowed {
			continue
		}
		if best < 0 || binds(ps[i].Result, ps[best].Result, admitted) {
			best = i
		}
	}
	if best < 0 && !admitted {
		return binding(ps, true) // none refused: describe them as they stand
	}
	return best
}

// binds reports whether result a describes the request better than b.
func binds(a, b sluice.Result, admitted bool) bool {
	if !admitted {
		if a.Unsatisfiable != b.Unsatisfiable {
			return a.Unsatisfiable
		}
		return a.RetryAfter > b.RetryAfter
	}
	if a.Remaining != b.Remaining {
		return a.Remaining < b.Remaining
	}
	return a.ResetAfter > b.ResetAfter
}
