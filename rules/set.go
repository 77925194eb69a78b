package rules

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/sluicehq/sluice"
)

// Set is a validated, immutable list of rules. It is safe for concurrent
// use.
type Set struct {
	rules  []Rule
	bypass []bypassEntry // see WithBypass
}

// New validates rules and returns them as a Set. Errors wrap
// [ErrInvalidRule] and name the rule and the field. An empty set is refused:
// a limiter with no rules limits nothing, which is never what was meant.
// Defaults are filled in: a Cost of 0 is 1, and a calendar limit
// ([sluice.PerCalendar]) whose Algorithm is left zero is enforced by
// [sluice.FixedWindow] (see [Rule.Algorithm]).
func New(rules ...Rule) (*Set, error) {
	if len(rules) == 0 {
		return nil, fmt.Errorf("%w: no rules", ErrInvalidRule)
	}
	s := &Set{rules: make([]Rule, len(rules))}
	seen := make(map[string]bool, len(rules))
	for i, r := range rules {
		if err := r.Validate(); err != nil {
			return nil, err
		}
		if seen[r.Name] {
			return nil, fmt.Errorf("%w %q: name: used by two rules", ErrInvalidRule, r.Name)
		}
		seen[r.Name] = true
		r = r.withDefaults()
		if r.Cost == 0 {
			r.Cost = 1
		}
		r.Lease.Rule = r.Name
		r.Count = r.Count.compile()
		r.over, _ = r.compileOverrides() // checked by Validate
		if _, known := ruleNames.Load(r.Name); !known {
			ruleNames.Store(strings.Clone(r.Name), struct{}{})
		}
		s.rules[i] = r
	}
	return s, nil
}

// withDefaults returns r as its hits decide it: a concurrency rule's Limit
// and Algorithm filled in from Concurrency, and a calendar limit's
// algorithm, left zero, the fixed window (which no other algorithm
// enforces; a rule file chooses it too).
func (r Rule) withDefaults() Rule {
	r = r.concurrent()
	r.Algorithm = algorithmFor(r.Limit, r.Algorithm)
	return r
}

// algorithmFor returns the algorithm that enforces l when a is given:
// the fixed window for a calendar limit whose algorithm is left zero
// (the only one that enforces it), else a.
func algorithmFor(l sluice.Limit, a sluice.Algorithm) sluice.Algorithm {
	if l.IsCalendar() && a == sluice.TokenBucket {
		return sluice.FixedWindow
	}
	return a
}

// MustNew is like [New] but panics on an error; for rules fixed in code.
func MustNew(rules ...Rule) *Set {
	s, err := New(rules...)
	if err != nil {
		panic(err)
	}
	return s
}

// Source supplies rules: a *Set (fixed rules), or anything that swaps sets
// at run time, such as a rule file's watcher (rulefile.Watcher). The
// middleware, the gRPC interceptors and the operator's handler
// (rules/admin) take one; a limiter calls Current once per request, so that
// every request is decided by one set, never a mix.
type Source interface {
	// Current returns the rules that decide the next request.
	Current() *Set
}

// Current returns s: a fixed Set is its own [Source].
func (s *Set) Current() *Set { return s }

// Rules returns a copy of the set's rules, with defaults filled in.
func (s *Set) Rules() []Rule { return append([]Rule(nil), s.rules...) }

// Len returns the number of rules.
func (s *Set) Len() int { return len(s.rules) }

// Matched is one request's rules and the hits they ask of the store.
// Reuse one across requests to avoid allocating; [Set.Resolve] resets it.
type Matched struct {
	// Rules are the rules that apply to the request, in the set's order.
	Rules []*Rule
	// Hits are what those rules ask of the store, Hits[i] for Rules[i],
	// ready for one [sluice.Store.Take].
	Hits []sluice.Hit
	// Bypass names the bypass entry that exempted the request from the
	// rules (see [Set.WithBypass]), or is "". When set, Rules and Hits
	// hold only that entry's limit, as a hidden rule of the same name.
	Bypass string
	// LimitEvents are the limits the request set for itself
	// ([sluice.WithLimit]) that Resolve capped or ignored, for the caller
	// to log and report.
	LimitEvents []sluice.RequestLimitEvent
}

// Resolve appends to m the rules r matches and their hits, in the set's
// order. A rule whose key finds no identity in r (see [keyfunc.Key]) is
// left out, unless its key is required. When a bypass entry identifies r, m holds that entry's limit
// instead, and m.Bypass names it (see [Set.WithBypass]). A key function's error is returned wrapped, naming the rule; it
// wraps [keyfunc.ErrNoKey] when the key function's error does.
//
// Each hit costs the rule's Cost, or, when r's context carries a cost
// ([sluice.WithCost]), that cost capped by the rule's MaxCost. A context
// cost of 0 makes every hit a peek ([sluice.Hit.Peek]) at the rule's Cost.
// A negative context cost is an error wrapping [sluice.ErrInvalidHit].
//
// Each hit's limit is the rule's limit for the identity: the limit r's
// context sets for the rule ([sluice.WithLimit]), capped by the rule's
// MaxLimit, else the override naming the identity ([Rule.Overrides]), else
// the rule's Limit. A context limit that is capped or ignored, or that
// names a rule no Set of the process has, is listed in m.LimitEvents. A request a
// bypass entry identifies is decided by the entry's limit alone.
//
// A concurrency rule's hit ([Rule.Concurrency]) takes one slot of the
// identity's max (or its override's): a context cost other than 0 and a
// context limit do not change it.
func (s *Set) Resolve(r *http.Request, m *Matched) error {
	m.Rules, m.Hits, m.Bypass, m.LimitEvents = m.Rules[:0], m.Hits[:0], "", m.LimitEvents[:0]
	ctx := r.Context()
	ctxCost, hasCost := sluice.CostFrom(ctx)
	if hasCost && ctxCost < 0 {
		return fmt.Errorf("rules: %w: negative request cost %d", sluice.ErrInvalidHit, ctxCost)
	}
	if len(s.bypass) > 0 && s.resolveBypass(r, m) {
		return nil
	}
	ctxLimits := sluice.Limits(ctx)
	if len(ctxLimits) > 0 {
		unknownLimits(ctxLimits, m)
	}
	for i := range s.rules {
		rule := &s.rules[i]
		if rule.Match != nil && !rule.Match(r) {
			continue
		}
		id, err := rule.Key.Identity(r)
		if err != nil {
			if rule.Key.Skips(err) {
				continue // no identity: the rule does not apply
			}
			return fmt.Errorf("rules: rule %q: %w", rule.Name, err)
		}
		cost := rule.Cost
		if hasCost && ctxCost > 0 && rule.Concurrency == nil { // a request takes one slot
			cost = ctxCost
			if rule.MaxCost > 0 {
				cost = min(cost, rule.MaxCost)
			}
		}
		var group string
		if !rule.Colocate.IsZero() {
			if group, err = rule.Colocate.Identity(r); err != nil {
				if rule.Colocate.Skips(err) {
					continue // no identity to colocate by: the rule does not apply
				}
				return fmt.Errorf("rules: rule %q: colocate: %w", rule.Name, err)
			}
		}
		var lease *sluice.LeasePolicy
		if rule.Lease.Active() {
			lease = &rule.Lease
		}
		limit := rule.LimitFor(id)
		if len(ctxLimits) > 0 && rule.Concurrency == nil { // a concurrency rule's max is its own
			if l, ok := sluice.LimitFrom(ctx, rule.Name); ok {
				var ev *sluice.RequestLimitEvent
				if limit, ev = rule.requestLimit(l, limit); ev != nil {
					m.LimitEvents = append(m.LimitEvents, *ev)
				}
			}
		}
		block, after := rule.Penalty.hitFields()
		m.Rules = append(m.Rules, rule)
		m.Hits = append(m.Hits, sluice.Hit{
			Block:     block,
			After:     after,
			Lease:     lease,
			Group:     group,
			Key:       BucketKey(rule.Name, rule.Key.Kind(), id),
			Limit:     limit,
			Algorithm: rule.Algorithm,
			Cost:      cost,
			Peek:      hasCost && ctxCost == 0,
			Shadow:    rule.Shadow,

			Concurrency: rule.Concurrency != nil,
		})
	}
	return nil
}

// unknownLimits lists in m.LimitEvents the limits of limits
// ([sluice.WithLimit]) that name no rule of any set of the process: a
// limit for another limiter's rule (chained middleware, chi's r.Use and
// r.With) is that limiter's, not unknown.
func unknownLimits(limits []sluice.RequestLimit, m *Matched) {
	for _, l := range limits {
		if _, known := ruleNames.Load(l.Rule); !known {
			m.LimitEvents = append(m.LimitEvents, sluice.RequestLimitEvent{Rule: l.Rule, Action: sluice.RequestLimitUnknownRule, Requested: l.Limit})
		}
	}
}

// ruleNames holds the names of the rules of every Set made in the process
// (a set of strings, never removed: bounded by the names ever written),
// so that a limit a request sets for a rule of no set is told from one for
// another limiter's rule.
var ruleNames sync.Map

// BucketKey encodes a rule's name, key kind and identity into one bucket
// key. Name and kind are length-prefixed, so no two different triples give
// the same key.
func BucketKey(rule, kind, identity string) string {
	// One allocation whatever the length: the builder's buffer becomes the
	// string (strconv.Itoa of a small length returns a constant).
	var b strings.Builder
	b.Grow(len(rule) + len(kind) + len(identity) + 8)
	b.WriteString(strconv.Itoa(len(rule)))
	b.WriteByte(':')
	b.WriteString(rule)
	b.WriteString(strconv.Itoa(len(kind)))
	b.WriteByte(':')
	b.WriteString(kind)
	b.WriteString(identity)
	return b.String()
}
