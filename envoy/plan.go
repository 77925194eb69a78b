package envoy

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/rules"
)

// checkRequest reports what makes req malformed, or nil.
func checkRequest(req *rlsv3.RateLimitRequest) error {
	switch {
	case req == nil:
		return errors.New("envoy: no request")
	case req.Domain == "":
		return errors.New("envoy: the request has no domain")
	case len(req.Descriptors) == 0:
		return errors.New("envoy: the request has no descriptors")
	case len(req.Descriptors) > MaxDescriptors:
		return fmt.Errorf("envoy: the request has %d descriptors, more than %d", len(req.Descriptors), MaxDescriptors)
	}
	for i, desc := range req.Descriptors {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("envoy: descriptors[%d]: %s", i, fmt.Sprintf(format, args...))
		}
		if desc == nil {
			return fail("null descriptor")
		}
		if len(desc.Entries) == 0 {
			return fail("no entries")
		}
		if len(desc.Entries) > MaxEntries {
			return fail("%d entries, more than %d", len(desc.Entries), MaxEntries)
		}
		for j, e := range desc.Entries {
			switch {
			case e == nil:
				return fail("entries[%d]: null entry", j)
			case e.Key == "":
				return fail("entries[%d]: empty key", j)
			case len(e.Key) > MaxEntryLen:
				return fail("entries[%d]: key longer than %d bytes", j, MaxEntryLen)
			case len(e.Value) > MaxEntryLen:
				return fail("entries[%d] (key %s): value longer than %d bytes", j, quote(e.Key), MaxEntryLen)
			}
		}
		if desc.IsNegativeHits {
			return fail("is_negative_hits is not supported: sluice gives back only what a request it refused took")
		}
		if h := desc.HitsAddend; h != nil && h.Value > MaxHitsAddend {
			return fail("hits_addend %d is more than %d", h.Value, uint64(MaxHitsAddend))
		}
		if o := desc.Limit; o != nil {
			if o.RequestsPerUnit == 0 {
				return fail("limit.requests_per_unit is 0: a limit admits at least one request per unit")
			}
			if overrideUnit(o.Unit) == rlsv3.RateLimitResponse_RateLimit_UNKNOWN {
				return fail("limit.unit %v is not a unit (SECOND, MINUTE, HOUR, DAY, MONTH, YEAR)", o.Unit)
			}
			if o.UnitMultiplier != nil && o.UnitMultiplier.Value == 0 {
				return fail("limit.unit_multiplier is 0")
			}
		}
	}
	return nil
}

// overrideUnit maps a limit override's unit to the response's, UNKNOWN
// for none.
func overrideUnit(u typev3.RateLimitUnit) rlsv3.RateLimitResponse_RateLimit_Unit {
	switch u {
	case typev3.RateLimitUnit_SECOND, typev3.RateLimitUnit_MINUTE, typev3.RateLimitUnit_HOUR,
		typev3.RateLimitUnit_DAY, typev3.RateLimitUnit_MONTH, typev3.RateLimitUnit_YEAR:
		return rlsv3.RateLimitResponse_RateLimit_Unit(u) // the same numbers
	}
	return rlsv3.RateLimitResponse_RateLimit_UNKNOWN
}

// plan matches req's descriptors to dom's limits and builds the hits.
func (s *Service) plan(req *rlsv3.RateLimitRequest, dom *domain, d *decision) error {
	var replaced []string
	ents := make([][]entry, len(req.Descriptors))
	shared := make([][]string, len(req.Descriptors))
	for i, desc := range req.Descriptors {
		ents[i] = make([]entry, len(desc.Entries))
		for j, e := range desc.Entries {
			ents[i][j] = entry{e.Key, e.Value}
		}
		d.limits[i], shared[i] = dom.match(ents[i])
		if lim := d.limits[i]; lim != nil {
			replaced = append(replaced, lim.replaces...)
		}
	}
	for i, desc := range req.Descriptors {
		d.hitOf[i] = -1
		lim := d.limits[i]
		var rule *rules.Rule
		switch {
		case desc.Limit != nil:
			r, cur, err := overrideRule(dom, lim, desc.Limit)
			if err != nil {
				return fmt.Errorf("envoy: descriptors[%d]: %w", i, err)
			}
			rule, d.over[i] = r, cur
		case lim == nil:
			d.answers[i] = answerUnmatched
			continue
		case lim.unlimited:
			d.answers[i] = answerUnlimited
			continue
		case slices.Contains(replaced, lim.name):
			d.answers[i] = answerReplaced
			continue
		case lim.banned:
			d.answers[i] = answerBanned
			continue
		default:
			rule = lim.rule
		}
		cost, peek := hitsAddend(req, desc)
		d.hitOf[i] = len(d.m.Hits)
		d.m.Rules = append(d.m.Rules, rule)
		d.m.Hits = append(d.m.Hits, sluice.Hit{
			Key:       rules.BucketKey(rule.Name, KeyKind, identity(dom.name, ents[i], shared[i])),
			Limit:     rule.Limit,
			Algorithm: rule.Algorithm,
			Cost:      cost,
			Peek:      peek,
			Shadow:    rule.Shadow,
		})
	}
	return nil
}

// overrideRule returns the rule a descriptor's limit override makes: the
// limit it matched, or the domain's override template, with the override's
// rate and without shadow mode, as envoyproxy/ratelimit applies overrides.
func overrideRule(dom *domain, lim *limit, o *ratelimitv3.RateLimitDescriptor_RateLimitOverride) (*rules.Rule, *rlsv3.RateLimitResponse_RateLimit, error) {
	r := dom.override
	if lim != nil && lim.rule != nil {
		r = *lim.rule
	}
	unit := overrideUnit(o.Unit)
	mult := uint32(1)
	if o.UnitMultiplier != nil {
		mult = o.UnitMultiplier.Value
	}
	r.Shadow = false
	r.Limit = sluice.Limit{Rate: int64(o.RequestsPerUnit), Period: unitDuration(unit) * time.Duration(mult)}
	if err := r.Algorithm.ValidateLimit(r.Limit); err != nil {
		return nil, nil, fmt.Errorf("limit: %d per %d %v with %v: %s", o.RequestsPerUnit, mult, unit, r.Algorithm,
			strings.TrimPrefix(err.Error(), sluice.ErrInvalidLimit.Error()+": "))
	}
	cur := &rlsv3.RateLimitResponse_RateLimit{Name: r.Name, RequestsPerUnit: o.RequestsPerUnit, Unit: unit, UnitMultiplier: o.UnitMultiplier}
	return &r, cur, nil
}

// hitsAddend returns a descriptor's cost: its own hits_addend, else the
// request's, 0 meaning 1. A descriptor's own hits_addend of 0 checks
// without consuming: a peek at a cost of 1.
func hitsAddend(req *rlsv3.RateLimitRequest, desc *ratelimitv3.RateLimitDescriptor) (cost int64, peek bool) {
	if h := desc.HitsAddend; h != nil {
		if h.Value == 0 {
			return 1, true
		}
		return int64(h.Value), false
	}
	return max(int64(req.HitsAddend), 1), false
}

// identity encodes a descriptor's domain and entries, each length-prefixed
// so that no two descriptors share one, with the pattern in place of the
// value where a share_threshold descriptor matched it.
func identity(domain string, entries []entry, shared []string) string {
	var b strings.Builder
	put := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	put(domain)
	for i, e := range entries {
		put(e.key)
		if shared != nil && shared[i] != "" {
			b.WriteByte('*') // a pattern, never equal to a value's encoding
			put(shared[i])
		} else {
			put(e.value)
		}
	}
	return b.String()
}

// onlyPeeks reports whether every hit checks without consuming.
func onlyPeeks(hits []sluice.Hit) bool {
	for i := range hits {
		if !hits[i].Peek {
			return false
		}
	}
	return true
}
