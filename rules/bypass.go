package rules

import (
	"fmt"
	"net/http"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/ascii"
	"github.com/sluicehq/sluice/keyfunc"
)

// Bypass exempts requests from a Set's rules: an office network, a
// monitoring system's API key, an operator's account. A request that a
// bypass entry identifies is decided by the entry's own Limit alone, so a
// leaked bypass credential buys a bounded rate, never an unbounded one.
//
// Every use is visible: the middleware reports it to its observer with the
// outcome [sluice.OutcomeBypassed] and the entry's name (never the
// identity), and logs it, sampled. The entry's limit is hidden from the
// rate-limit headers; a request over it gets 429 with Retry-After like any
// other. An exempt request costs 1, whatever cost [sluice.WithCost] set.
type Bypass struct {
	// Name identifies the entry in metrics and logs and in its bucket
	// keys. Required, printable ASCII, unique among the set's rules and
	// bypass entries.
	Name string
	// Identify reports whether r is exempt, and the identity the entry's
	// limit counts it by (a client address, a hashed API key, a user).
	// Required. It runs on every request before the rules: keep it cheap
	// and free of I/O. It must fail towards "not exempt": a request it
	// cannot identify goes through the rules as usual.
	Identify func(r *http.Request) (identity string, ok bool)
	// Limit bounds the requests the entry exempts, per identity. Required.
	Limit sluice.Limit
	// Algorithm enforces Limit. Default: [sluice.TokenBucket], or
	// [sluice.FixedWindow] for a calendar limit, as on a [Rule].
	Algorithm sluice.Algorithm
	// OnFail is what happens to an exempt request when the store fails.
	// Default: FailLocal.
	OnFail OnFail
}

// bypassKind is the key kind of a bypass entry's buckets.
const bypassKind = "bypass"

// key is the entry's identity as a key function: the rule an entry holds
// is decided by its own bucket key (see resolveBypass), never through it.
func (b Bypass) key(r *http.Request) (string, error) {
	if id, ok := b.Identify(r); ok && id != "" {
		return id, nil
	}
	return "", fmt.Errorf("rules: bypass %q: %w", b.Name, keyfunc.ErrMissing)
}

// bypassEntry is a validated Bypass with the hidden rule its limit is
// decided as.
type bypassEntry struct {
	src  Bypass
	rule Rule
}

// WithBypass returns a copy of s in which each request is first offered to
// entries, in order; the first entry that identifies it decides it with its
// own limit instead of the rules (see [Bypass]). s itself is unchanged.
// Errors wrap [ErrInvalidRule] and name the entry and the field.
func (s *Set) WithBypass(entries ...Bypass) (*Set, error) {
	names := make(map[string]bool, len(s.rules)+len(s.bypass)+len(entries))
	for i := range s.rules {
		names[s.rules[i].Name] = true
	}
	for i := range s.bypass {
		names[s.bypass[i].rule.Name] = true
	}
	out := &Set{rules: s.rules, bypass: append([]bypassEntry(nil), s.bypass...)}
	for _, b := range entries {
		e, err := newBypassEntry(b)
		if err != nil {
			return nil, err
		}
		if names[b.Name] {
			return nil, fmt.Errorf("%w: bypass %q: name: used twice", ErrInvalidRule, b.Name)
		}
		names[b.Name] = true
		out.bypass = append(out.bypass, e)
	}
	return out, nil
}

func newBypassEntry(b Bypass) (bypassEntry, error) {
	fail := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: bypass %q: %s: %s", ErrInvalidRule, b.Name, field, fmt.Sprintf(format, args...))
	}
	switch {
	case b.Name == "":
		return bypassEntry{}, fmt.Errorf("%w: a bypass entry has no name", ErrInvalidRule)
	case !ascii.Printable(b.Name):
		return bypassEntry{}, fail("name", "must be printable ASCII")
	case b.Identify == nil:
		return bypassEntry{}, fail("identify", "no function")
	case !b.Algorithm.Valid():
		return bypassEntry{}, fail("algorithm", "unknown algorithm %d", b.Algorithm)
	case b.OnFail > FailClosed:
		return bypassEntry{}, fail("on_fail", "unknown policy %d", b.OnFail)
	}
	b.Algorithm = algorithmFor(b.Limit, b.Algorithm)
	if err := b.Algorithm.ValidateLimit(b.Limit); err != nil {
		return bypassEntry{}, fail("limit", "%v", err)
	}
	return bypassEntry{
		src: b,
		rule: Rule{
			Name: b.Name, Key: keyfunc.New(bypassKind, b.key), Limit: b.Limit, Algorithm: b.Algorithm,
			Cost: 1, OnFail: b.OnFail, Hidden: true,
		},
	}, nil
}

// resolveBypass fills m with the first entry that identifies r, and
// reports whether there was one.
func (s *Set) resolveBypass(r *http.Request, m *Matched) bool {
	for i := range s.bypass {
		e := &s.bypass[i]
		id, ok := e.src.Identify(r)
		if !ok || id == "" {
			continue
		}
		m.Bypass = e.rule.Name
		m.Rules = append(m.Rules, &e.rule)
		m.Hits = append(m.Hits, sluice.Hit{
			Key:       BucketKey(e.rule.Name, bypassKind, id),
			Limit:     e.rule.Limit,
			Algorithm: e.rule.Algorithm,
			Cost:      1,
		})
		return true
	}
	return false
}

// BypassEntries returns a copy of the set's bypass entries, in the order
// they are offered each request (see [Set.WithBypass]).
func (s *Set) BypassEntries() []Bypass {
	out := make([]Bypass, len(s.bypass))
	for i := range s.bypass {
		out[i] = s.bypass[i].src
	}
	return out
}
