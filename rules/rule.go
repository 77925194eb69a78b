package rules

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/ascii"
	"github.com/sluicehq/sluice/internal/ident"
	"github.com/sluicehq/sluice/keyfunc"
)

// OnFail says what a rule does when the store cannot decide (Redis down,
// slow beyond the latency budget).
type OnFail uint8

const (
	// FailLocal decides the rule in process instead: from an in-memory
	// bucket holding the rule's share of its limit, the limit divided by
	// the number of instances sharing the store (counted through the store,
	// or given with the middleware's WithInstances), so the instances
	// together stay near the limit while the store is failing or slow. A
	// bucket starts where the store last left it, when the store keeps a
	// record of that ([sluice.BucketRecorder], as the Redis store does):
	// its share of what remained, not a fresh full share. The default: a
	// failing store may over-admit by a bounded factor, never without
	// bound.
	FailLocal OnFail = iota
	// FailOpen lets the request through, counted and logged: while the
	// store fails, the rule limits nothing.
	FailOpen
	// FailClosed refuses the request with 503 Service Unavailable and a
	// Retry-After: while the store fails, nothing the rule matches passes.
	FailClosed
)

var onFailNames = [...]string{"local", "open", "closed"}

// String returns "local", "open" or "closed".
func (f OnFail) String() string {
	if int(f) < len(onFailNames) {
		return onFailNames[f]
	}
	return fmt.Sprintf("OnFail(%d)", uint8(f))
}

// ParseOnFail returns the policy named s ("local", "open" or "closed").
func ParseOnFail(s string) (OnFail, error) {
	for i, n := range onFailNames {
		if n == s {
			return OnFail(i), nil
		}
	}
	return 0, fmt.Errorf("rules: unknown on_fail %q (known: local, open, closed)", s)
}

// Rule is one rate limit applied to the requests it matches.
type Rule struct {
	// Name identifies the rule: in headers, problem details, metrics and
	// logs, and in its bucket keys. Required, unique within a Set,
	// printable ASCII.
	Name string
	// Key returns the identity the rule counts by, and its kind, which is
	// part of the bucket key (see [keyfunc.Key]). Required. A request
	// without the identity (no API key header, no user) is skipped by the
	// rule unless the key is [keyfunc.Key.Required]; any other key error
	// refuses the request (see the middleware package): a request the
	// rule cannot key is never counted in a shared bucket.
	Key keyfunc.Key
	// Limit is the rate enforced per identity. Required; see
	// [sluice.Limit.Validate].
	Limit sluice.Limit
	// Algorithm enforces Limit. Default: [sluice.TokenBucket]; for a
	// calendar limit ([sluice.PerCalendar]), [sluice.FixedWindow], the
	// only algorithm that enforces one: TokenBucket, the zero value, counts
	// as left out there, and another algorithm is refused.
	Algorithm sluice.Algorithm
	// Cost is what one request consumes. 0 means 1. Must not exceed the
	// limit's capacity.
	Cost int64
	// MaxCost caps the cost a request may set for itself with
	// [sluice.WithCost]: a larger cost is charged as MaxCost. 0 means no
	// cap (a cost above the capacity is then refused as one that can
	// never pass).
	MaxCost int64
	// Colocate, when set, is the identity whose buckets this rule's
	// buckets join on a store that spreads buckets over shards (Redis
	// Cluster), such as the user on a per-user rule and a
	// per-user-endpoint one: a request's rules colocated by the same
	// identity are then decided in one atomic script call rather than one
	// per hash slot with refunds. Its value must be determined by the
	// rule's own identity. A rule keyed by IP, endpoint or nothing
	// (global) cannot be colocated: its buckets must spread over the
	// cluster, and nothing can be colocated by those kinds. A request
	// without the identity skips the rule, as one without the rule's own
	// identity does. Changing it starts new buckets in the Redis store.
	// Default: the zero Key, each bucket placed on its own.
	Colocate keyfunc.Key
	// OnFail is what happens when the store fails. Default: FailLocal.
	OnFail OnFail
	// Shadow makes the rule a dry run: counted and reported to observers,
	// never blocking, never in headers.
	Shadow bool
	// Hidden keeps an enforcing rule out of the rate-limit headers and
	// the problem details (Retry-After is still sent).
	Hidden bool
	// Match selects the requests the rule applies to. nil matches all.
	// It runs on every request: keep it cheap, and free of I/O.
	Match func(*http.Request) bool
	// Lease is the rule's local-lease and hot-key policy, honoured by a
	// lease store (store/lease) and ignored by others: each of the
	// rule's hits carries it ([sluice.Hit.Lease]). Its Rule field is set
	// to the rule's name. The zero value leases nothing.
	Lease sluice.LeasePolicy
	// Count, when set, makes the rule count only the requests whose
	// responses it lists (see [Count]): taken at admission, given back
	// when the request is over if its status is not listed. nil counts
	// every request the rule matches.
	Count *Count
	// Overrides replace Limit for the identities they name, looked up in
	// memory on each request (no I/O). Each identity keeps its bucket:
	// changing its limit (a reloaded rule file) applies at once, as a
	// changed Limit does. A rule keyed by global has no identities to
	// override. Default: none.
	Overrides []Override
	// MaxLimit caps the limit a request may set for itself with
	// [sluice.WithLimit]: a higher one is applied as MaxLimit. It has the
	// rule's period, and is not below Limit. The zero Limit, the default,
	// caps a request's limit at Limit: a request may lower the rule's
	// limit, never raise it. Precedence: a request's own limit, else an
	// override's, else Limit.
	MaxLimit sluice.Limit
	// Penalty, when set, blocks an identity the rule refuses for a while
	// (see [Penalty]). nil, the default: no penalty.
	Penalty *Penalty
	// Concurrency, when set, makes the rule a concurrency limit in place
	// of a rate (see [Concurrency]): leave Limit and Algorithm zero. nil,
	// the default: a rate limit.
	Concurrency *Concurrency

	over *overrides // Overrides, compiled by New
}

// Exposed reports whether the rule may appear in headers and problem
// details: an enforcing rule that is not hidden.
func (r *Rule) Exposed() bool { return !r.Shadow && !r.Hidden }

// ErrInvalidRule reports a rule New refuses. The message names the rule
// and the field.
var ErrInvalidRule = errors.New("rules: invalid rule")

// Validate checks r as [New] does, without the checks that need the
// whole set (unique names). Errors wrap [ErrInvalidRule] and name the rule
// and the field.
func (r *Rule) Validate() error {
	fail := func(field, format string, args ...any) error {
		return fmt.Errorf("%w %q: %s: %s", ErrInvalidRule, r.Name, field, fmt.Sprintf(format, args...))
	}
	switch {
	case r.Name == "":
		return fmt.Errorf("%w: a rule has no name", ErrInvalidRule)
	case !ascii.Printable(r.Name):
		return fail("name", "must be printable ASCII")
	case r.Key.IsZero():
		return fail("key", "no key function")
	case !r.Algorithm.Valid():
		return fail("algorithm", "unknown algorithm %d", r.Algorithm)
	case r.Cost < 0:
		return fail("cost", "%d is negative", r.Cost)
	case r.MaxCost < 0:
		return fail("max_cost", "%d is negative", r.MaxCost)
	case r.MaxCost > 0 && r.MaxCost < r.cost():
		return fail("max_cost", "%d is below the cost %d", r.MaxCost, r.cost())
	case r.OnFail > FailClosed:
		return fail("on_fail", "unknown policy %d", r.OnFail)
	case !r.Colocate.IsZero() && !ident.Colocatable(r.Key.Kind()):
		return fail("colocate", "a rule keyed by %s cannot be colocated: its buckets must spread over the cluster; only buckets of one identity (a user, an API key) may share a slot", r.Key.Kind())
	case !r.Colocate.IsZero() && !ident.Colocatable(r.Colocate.Kind()):
		return fail("colocate", "cannot colocate by %s: every bucket of the service would share one slot; colocate by an identity such as a user or an API key", r.Colocate.Kind())
	}
	if field, problem := r.Concurrency.validate(r); problem != "" {
		return fail(field, "%s", problem)
	}
	filled := r.withDefaults()
	r = &filled
	if err := r.Algorithm.ValidateLimit(r.Limit); err != nil {
		return fail("limit", "%v", err)
	}
	if err := r.Lease.Validate(); err != nil {
		return fmt.Errorf("%w %q: %v", ErrInvalidRule, r.Name, err)
	}
	if n := int64(r.Lease.HotKeys.Split); n >= 2 && (r.Limit.Rate < n || r.Limit.Capacity() < n) {
		return fail("hot_keys.split", "%d: the limit (rate %d, capacity %d) cannot be split into %d sub-buckets of at least 1", n, r.Limit.Rate, r.Limit.Capacity(), n)
	}
	if field, problem := r.Penalty.validate(r); problem != "" {
		return fail(field, "%s", problem)
	}
	if field, problem := r.Count.validate(); problem != "" {
		return fail(field, "%s", problem)
	}
	if cost := r.cost(); cost > r.Limit.Capacity() {
		return fail("cost", "%d exceeds the capacity %d: no request could ever pass", cost, r.Limit.Capacity())
	}
	if err := r.checkMaxLimit(); err != nil {
		return fail("max_limit", "%v", err)
	}
	_, err := r.compileOverrides()
	return err
}

func (r *Rule) cost() int64 {
	if r.Cost == 0 {
		return 1
	}
	return r.Cost
}
