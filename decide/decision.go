package decide

import (
	"errors"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/rules"
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
	// kept.
	Unavailable
)

var verdictNames = [...]string{"admitted", "refused", "unavailable"}

// String returns "admitted", "refused" or "unavailable".
func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "Verdict(?)"
}

// Decision is one request's decision, written by [Decider.Decide]. Its
// slices are indexed like the matched rules (rules.Matched.Rules and
// Hits). Reuse one across requests, as a rules.Matched, to avoid
// allocating. The zero value is an admitted request that matched no
// rules.
type Decision struct {
	// Verdict is the answer.
	Verdict Verdict
	// Results are the rules' results: the store's, or, for a rule the
	// local fallback decided, the fallback's. The zero Result for a rule
	// nobody decided (see Decided).
	Results []sluice.Result
	// Failed marks the rules whose hits the store failed: all of them
	// after a whole failure, some after a [*sluice.PartialError], none
	// when Err is nil.
	Failed []bool
	// Local marks the failed rules the local fallback decided (their
	// on_fail is local).
	Local []bool
	// Err is the store's error, nil when it decided every hit. It is for
	// logs and error handlers, never for clients.
	Err error
	// Latency is how long the store call took; 0 when none was made.
	Latency time.Duration

	m       *rules.Matched
	headers bool // see Headers
}

// reset makes d the undecided decision of m, admitted.
func (d *Decision) reset(m *rules.Matched) {
	n := len(m.Hits)
	d.m, d.Verdict, d.Err, d.Latency, d.headers = m, Admitted, nil, 0, false
	if cap(d.Results) < n {
		d.Results = make([]sluice.Result, n)
	}
	d.Results = d.Results[:n]
	clear(d.Results)
	d.Failed, d.Local = falses(d.Failed, n), falses(d.Local, n)
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

// markFailed marks in d.Failed the rules of pe's failed hits and reports
// whether pe names only hits of the request.
func (d *Decision) markFailed(pe *sluice.PartialError) bool {
	for _, i := range pe.Failed {
		if i < 0 || i >= len(d.Failed) {
			return false
		}
		d.Failed[i] = true
	}
	return true
}

// Decided reports whether rule i's result is a decision: the store's, or
// the local fallback's. A rule the store failed whose policy is open or
// closed was decided by nobody.
func (d *Decision) Decided(i int) bool { return !d.Failed[i] || d.Local[i] }

// Refusing reports whether rule i refused the request: an enforcing rule,
// decided, whose result did not pass.
func (d *Decision) Refusing(i int) bool {
	return d.Decided(i) && !d.m.Rules[i].Shadow && !d.Results[i].Allowed
}

// Headers reports whether rate-limit headers describe the request: the
// store decided some of its rules, and, when the request is not admitted,
// one of those refused it. Only the exposed rules the store decided
// appear in them (see [Decision.AppendPolicies]); rules decided by their
// on_fail policy never do.
func (d *Decision) Headers() bool { return d.headers }

// AppendPolicies appends to dst the exposed rules ([rules.Rule.Exposed])
// the store decided, with their results, in the rules' order, and returns
// the extended slice: what the rate-limit headers describe.
func (d *Decision) AppendPolicies(dst []headers.Policy) []headers.Policy {
	if d.m == nil {
		return dst // the zero Decision: no rules
	}
	for i, rule := range d.m.Rules {
		if rule.Exposed() && !d.Failed[i] {
			dst = append(dst, headers.Policy{Name: rule.Name, Result: d.Results[i]})
		}
	}
	return dst
}

// RetryAfter returns how long the client should wait before it tries
// again. For an [Unavailable] request, how long the store expects to stay
// unavailable (a circuit breaker's remaining open time), at least a
// second. Otherwise, the longest wait among the rules refusing the
// request ([Decision.Refusing]), exact, not rounded; 0 when none refuses,
// and meaningless when one never can pass ([Decision.Unsatisfiable]).
func (d *Decision) RetryAfter() time.Duration {
	if d.Verdict == Unavailable {
		retry := time.Second
		if se, ok := errors.AsType[*sluice.StoreError](d.Err); ok {
			retry = max(retry, se.RetryAfter)
		}
		return retry
	}
	var retry time.Duration
	for i := range d.Results {
		if d.Refusing(i) {
			retry = max(retry, d.Results[i].RetryAfter)
		}
	}
	return retry
}

// Unsatisfiable reports whether a rule refusing the request can never
// pass it: the request's cost exceeds the rule's capacity, however long
// the client waits.
func (d *Decision) Unsatisfiable() bool {
	for i := range d.Results {
		if d.Refusing(i) && d.Results[i].Unsatisfiable {
			return true
		}
	}
	return false
}
