package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
)

// Override replaces a rule's limit for some of its identities: a customer
// who bought more, a partner, a tenant on probation (see
// [Rule.Overrides]).
type Override struct {
	// Identities are the identities whose limit is replaced, written as an
	// operator names them to the operator API ([keyfunc.Key.Parse]: an
	// address for an ip key, the header's value for a header key, ...),
	// except that a rule keyed by API key (kind "api_key") lists each key
	// as "sha256:" and the hexadecimal SHA-256 of the key
	// (rulefile.HashAPIKey), never in clear. At least one; an identity may
	// appear in one override of a rule only.
	Identities []string
	// Limit replaces the rule's limit for them, enforced by the rule's
	// algorithm, in the same buckets. Required; valid for the algorithm,
	// and a request of the rule's cost must fit its capacity.
	Limit sluice.Limit
}

// apiKeyKind is the key kind whose override identities are SHA-256 hashes.
const apiKeyKind = "api_key"

// apiKeyHashPrefix starts an API key's hash in an override.
const apiKeyHashPrefix = "sha256:"

// overrides is a rule's compiled Overrides: its identities' limits,
// looked up in memory on every request.
type overrides struct {
	limits []sluice.Limit
	byID   map[string]int32            // by identity as the key gives it
	byHash map[[sha256.Size]byte]int32 // a rule keyed by API key: by the key's hash
}

// lookup returns the limit that overrides the rule's for identity id.
func (o *overrides) lookup(id string) (sluice.Limit, bool) {
	var i int32
	var ok bool
	if o.byHash != nil {
		i, ok = o.byHash[hashKey(id)]
	} else {
		i, ok = o.byID[id]
	}
	if !ok {
		return sluice.Limit{}, false
	}
	return o.limits[i], true
}

// hashKey returns the SHA-256 of an API key. Keys up to 256 bytes are
// hashed from a copy on the stack, without allocating.
func hashKey(id string) [sha256.Size]byte {
	var buf [256]byte
	if len(id) <= len(buf) {
		n := copy(buf[:], id)
		return sha256.Sum256(buf[:n])
	}
	return sha256.Sum256([]byte(id))
}

// OverrideError reports an override identity a rule's key cannot read.
// It never repeats the identity (it may be an API key pasted in clear).
type OverrideError struct {
	// Override and Identity are the positions, from 0, of the override in
	// the rule's Overrides and of the identity in its Identities.
	Override, Identity int
	// Form is what an identity of the rule's key is.
	Form string
}

func (e *OverrideError) Error() string {
	return fmt.Sprintf("identity #%d: want %s", e.Identity+1, e.Form)
}

// compileOverrides checks r's Overrides and returns them ready for
// look-ups, or nil when there are none. The error names the field, as
// Validate's do.
func (r *Rule) compileOverrides() (*overrides, error) {
	if len(r.Overrides) == 0 {
		return nil, nil
	}
	fail := func(field, format string, args ...any) error {
		return fmt.Errorf("%w %q: %s: %s", ErrInvalidRule, r.Name, field, fmt.Sprintf(format, args...))
	}
	kind := r.Key.Kind()
	if kind == "global" {
		return nil, fail("overrides", "a rule keyed by global counts all requests in one bucket: it has no identities to override; change its limit instead")
	}
	o := &overrides{limits: make([]sluice.Limit, len(r.Overrides))}
	hashed := kind == apiKeyKind
	n := 0
	for _, ov := range r.Overrides {
		n += len(ov.Identities)
	}
	if hashed {
		o.byHash = make(map[[sha256.Size]byte]int32, n)
	} else {
		o.byID = make(map[string]int32, n)
	}
	for i, ov := range r.Overrides {
		field := fmt.Sprintf("overrides[%d]", i)
		if len(ov.Identities) == 0 {
			return nil, fail(field+".identities", "empty: an override names at least one identity")
		}
		if err := r.checkOverrideLimit(ov.Limit); err != nil {
			return nil, fail(field+".limit", "%v", err)
		}
		o.limits[i] = ov.Limit
		for j, typed := range ov.Identities {
			var dup bool
			if hashed {
				sum, err := parseKeyHash(typed)
				if err != nil {
					return nil, fail(fmt.Sprintf("%s.identities[%d]", field, j), "%v", err)
				}
				_, dup = o.byHash[sum]
				o.byHash[sum] = int32(i)
			} else {
				id, err := r.Key.Parse(typed)
				if err == nil && id == "" {
					err = errors.New("empty identity")
				}
				if err != nil {
					return nil, fail(fmt.Sprintf("%s.identities[%d]", field, j), "a rule keyed by %s: %s", kind, describeForm(err))
				}
				_, dup = o.byID[id]
				o.byID[id] = int32(i)
			}
			if dup {
				return nil, fail(fmt.Sprintf("%s.identities[%d]", field, j), "the identity is listed twice: give each identity one limit")
			}
		}
	}
	return o, nil
}

// checkOverrideLimit checks an override's limit as Validate checks the
// rule's.
func (r *Rule) checkOverrideLimit(l sluice.Limit) error {
	if err := r.Algorithm.ValidateLimit(l); err != nil {
		return err
	}
	if (l.Calendar != sluice.NoCalendar || r.Limit.Calendar != sluice.NoCalendar) && !l.SamePeriod(r.Limit) {
		return fmt.Errorf("%v: an override of a calendar limit, or a calendar override, counts in the rule's periods (%v): give it the rule's calendar and zone", l, r.Limit)
	}
	if c := r.Concurrency; c != nil && l.Period != c.Hold {
		return fmt.Errorf("%v: an override of a concurrency rule replaces its max: give it the rule's hold (%v) as its period", l, c.Hold)
	}
	if cost := r.cost(); cost > l.Capacity() {
		return fmt.Errorf("capacity %d is below the cost %d: no request could ever pass", l.Capacity(), cost)
	}
	if n := int64(r.Lease.HotKeys.Split); n >= 2 && (l.Rate < n || l.Capacity() < n) {
		return fmt.Errorf("%v cannot be split into the %d sub-buckets of hot_keys.split", l, n)
	}
	return nil
}

// describeForm says what an identity must be, from a key's parse error.
func describeForm(err error) string {
	var fe *keyfunc.FormError
	if !errors.As(err, &fe) {
		return err.Error()
	}
	if fe.Part > 0 {
		return fmt.Sprintf("part #%d (%s): want %s", fe.Part, fe.Kind, fe.Form)
	}
	return "want " + fe.Form
}

// parseKeyHash reads "sha256:" and 64 hex digits. Its error never repeats
// the value: it may be a key pasted in clear.
func parseKeyHash(s string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	h, ok := strings.CutPrefix(s, apiKeyHashPrefix)
	if !ok || len(h) != 2*sha256.Size {
		return sum, errors.New(`a rule keyed by api_key lists keys as "sha256:" and 64 hex digits (see rulefile.HashAPIKey; keys are never written in clear); the value is not shown`)
	}
	if _, err := hex.Decode(sum[:], []byte(h)); err != nil {
		return sum, errors.New(`a rule keyed by api_key lists keys as "sha256:" and 64 hex digits (see rulefile.HashAPIKey; keys are never written in clear); the value is not shown`)
	}
	if sum == sha256.Sum256(nil) {
		return sum, errors.New("the SHA-256 of an empty key: no request has an empty key")
	}
	return sum, nil
}

// LimitFor returns the limit of the rule for identity id, as the rule's
// key gives it: an override's (see [Rule.Overrides]), or the rule's own.
// A request's own limit ([sluice.WithLimit]) is not included. It reads the
// overrides as [New] compiled them: for a rule of a Set (see
// [Set.Rules]); for another, it returns Limit.
func (r *Rule) LimitFor(id string) sluice.Limit {
	if r.over != nil {
		if l, ok := r.over.lookup(id); ok {
			return l
		}
	}
	return r.Limit
}

// checkMaxLimit checks r's MaxLimit, if set: a limit for the rule's
// algorithm, with its period, not below its limit.
func (r *Rule) checkMaxLimit() error {
	m := r.MaxLimit
	if m == (sluice.Limit{}) {
		return nil
	}
	if err := r.Algorithm.ValidateLimit(m); err != nil {
		return err
	}
	switch {
	case !m.SamePeriod(r.Limit):
		return fmt.Errorf("per %v: a request's limit keeps the rule's period; write max_limit per %v", periodText(m), periodText(r.Limit))
	case m.Rate < r.Limit.Rate || m.Capacity() < r.Limit.Capacity():
		return fmt.Errorf("%v is below the rule's limit %v", m, r.Limit)
	}
	return nil
}

// requestLimit returns the limit r applies for a request that set l for
// it ([sluice.WithLimit]), and, when it does not apply l as set, the event
// that says so. A Period of 0 is the rule's.
func (r *Rule) requestLimit(l sluice.Limit, fallback sluice.Limit) (sluice.Limit, *sluice.RequestLimitEvent) {
	requested := l
	if l.Period == 0 && l.Calendar == sluice.NoCalendar {
		l.Period, l.Calendar, l.Zone = r.Limit.Period, r.Limit.Calendar, r.Limit.Zone
	}
	if !l.SamePeriod(r.Limit) || r.Algorithm.ValidateLimit(l) != nil {
		return fallback, &sluice.RequestLimitEvent{Rule: r.Name, Action: sluice.RequestLimitInvalid, Requested: requested}
	}
	capLimit := r.MaxLimit
	if capLimit == (sluice.Limit{}) {
		capLimit = r.Limit
	}
	if l.Rate <= capLimit.Rate && l.Capacity() <= capLimit.Capacity() {
		return l, nil
	}
	l.Rate = min(l.Rate, capLimit.Rate)
	if c := min(requested.Capacity(), capLimit.Capacity()); c != l.Rate {
		l.Burst = c
	} else {
		l.Burst = 0
	}
	if r.Algorithm.ValidateLimit(l) != nil { // a window algorithm: no burst
		l.Burst = 0
	}
	return l, &sluice.RequestLimitEvent{Rule: r.Name, Action: sluice.RequestLimitCapped, Requested: requested, Applied: l}
}

// periodText is l's period as an error names it: its duration, or its
// calendar and zone.
func periodText(l sluice.Limit) string {
	if l.Calendar != sluice.NoCalendar {
		return l.Calendar.String() + " " + l.Location().String()
	}
	return l.Period.String()
}
