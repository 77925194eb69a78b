package envoy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/rules"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Limits on a request, beyond which it is refused as InvalidArgument.
const (
	// MaxDescriptors is the most descriptors one request may carry.
	MaxDescriptors = 64
	// MaxEntries is the most entries one descriptor may carry.
	MaxEntries = 32
	// MaxEntryLen is the longest key or value of an entry, in bytes.
	MaxEntryLen = 4096
	// MaxHitsAddend is the largest hits_addend (cost) accepted.
	MaxHitsAddend = 1 << 50
)

// KeyKind is the key kind ([rules.BucketKey]) of the buckets the service
// counts descriptors in.
const KeyKind = "envoy"

// Service is the Envoy rate limit service
// (envoy.service.ratelimit.v3.RateLimitService) over a sluice store. Create
// it with [New], register it on a gRPC server with [Service.Register]. It
// is safe for concurrent use.
type Service struct {
	rlsv3.UnimplementedRateLimitServiceServer

	store   sluice.Store
	mapping atomic.Pointer[Mapping]
	cfg     config
	decider *decide.Decider
	metrics *serviceMetrics // nil unless registered
}

// New returns the service deciding the descriptors of mapping's domains on
// store. Store and mapping are required; a nil one, or an invalid option,
// is an error wrapping [sluice.ErrInvalidConfig].
func New(store sluice.Store, mapping *Mapping, opts ...Option) (*Service, error) {
	if store == nil {
		return nil, invalidConfig("New: nil store")
	}
	if mapping == nil {
		return nil, invalidConfig("New: nil mapping")
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	s := &Service{store: store, cfg: cfg}
	if s.decider, err = decide.New(store, cfg.decide...); err != nil {
		return nil, err
	}
	if cfg.registerer != nil {
		if s.metrics, err = newServiceMetrics(cfg.registerer); err != nil {
			return nil, err
		}
	}
	s.mapping.Store(mapping)
	return s, nil
}

// Register registers the service on r, such as a [*grpc.Server].
func (s *Service) Register(r grpc.ServiceRegistrar) {
	rlsv3.RegisterRateLimitServiceServer(r, s)
}

// Mapping returns the mapping in use.
func (s *Service) Mapping() *Mapping { return s.mapping.Load() }

// SetMapping makes m the mapping that decides the next requests, such as
// one loaded again after a change. Each request is decided by one mapping,
// the old or the new. A rate limit keeps its buckets while its name, its
// descriptor and its algorithm stay the same.
func (s *Service) SetMapping(m *Mapping) error {
	if m == nil {
		return invalidConfig("SetMapping: nil mapping")
	}
	s.mapping.Store(m)
	return nil
}

// Answers for a descriptor, before the store decides.
type answer uint8

const (
	answerLimited   answer = iota // counted by its hit
	answerUnlimited               // unlimited: true
	answerReplaced                // its limit is replaced by another of the request's
	answerUnmatched               // no limit of its domain applies
	answerBanned                  // its limit is requests_per_unit: 0 (see quota.go)
)

// answerNames label the descriptors metric; a banned descriptor counts as
// limited, by its limit of 0.
var answerNames = [...]string{"limited", "unlimited", "replaced", "unmatched", "limited"}

// decision is one request's working state.
type decision struct {
	answers []answer
	hitOf   []int                                // descriptor → hit index, -1 for none
	limits  []*limit                             // descriptor → its mapping limit, nil for none
	over    []*rlsv3.RateLimitResponse_RateLimit // descriptor → its override's limit, nil for none
	m       rules.Matched                        // the counted descriptors' rules and hits
	dec     decide.Decision
}

// ShouldRateLimit decides a request's descriptors together, in one store
// call: the request is OVER_LIMIT when one enforcing descriptor is, and
// then consumes nothing in any of them. See the package documentation for
// how descriptors map to rate limits and what the response holds.
//
// A malformed request is answered with codes.InvalidArgument saying what
// is wrong. When the store fails, each rule applies its on_fail; a rule
// failing closed answers codes.Unavailable, which Envoy's filter turns
// into a refusal with failure_mode_deny.
func (s *Service) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	start := time.Now()
	m := s.mapping.Load()
	dom := m.domains[req.GetDomain()]
	resp, err := s.decide(ctx, req, dom)
	s.addMetadata(req, dom, resp)
	if s.metrics != nil {
		s.metrics.request(req.GetDomain(), dom != nil, resp, err, time.Since(start))
	}
	return resp, err
}

func (s *Service) decide(ctx context.Context, req *rlsv3.RateLimitRequest, dom *domain) (*rlsv3.RateLimitResponse, error) {
	if err := checkRequest(req); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	n := len(req.Descriptors)
	d := &decision{answers: make([]answer, n), hitOf: make([]int, n), limits: make([]*limit, n), over: make([]*rlsv3.RateLimitResponse_RateLimit, n)}
	if dom == nil {
		for i := range d.answers {
			d.answers[i], d.hitOf[i] = answerUnmatched, -1
		}
		if s.metrics != nil {
			s.metrics.counted(req.Domain, false, d.answers)
		}
		return s.unmatched(d, s.cfg.unknownDomain), nil
	}
	if err := s.plan(req, dom, d); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if s.metrics != nil {
		s.metrics.counted(req.Domain, true, d.answers)
	}
	if refusedEarly(dom, d) {
		return s.unmatched(d, dom.unmatched), nil // refused before counting: nothing consumed
	}
	softenQuotas(d)
	if len(d.m.Hits) == 0 {
		return s.respond(d, true), nil
	}
	s.decider.Decide(ctx, &d.m, &d.dec)
	if d.dec.Verdict == decide.Unavailable {
		return nil, unavailable(d)
	}
	return s.respond(d, s.settleQuotas(ctx, d, admitted(d))), nil
}

// admitted reports whether a decided request passes: as the decider
// decided it, except that a request of checks only (hits_addend 0, which
// never refuse beside descriptors that consume) is refused when one of
// them found its cost missing.
func admitted(d *decision) bool {
	if d.dec.Verdict != decide.Admitted {
		return false
	}
	if !onlyPeeks(d.m.Hits) {
		return true
	}
	for j := range d.m.Hits {
		if d.dec.Refusing(j) {
			return false
		}
	}
	return true
}

// unavailable returns the error of a request the store failed while a
// limit fails closed: codes.Unavailable, naming the limit.
func unavailable(d *decision) error {
	name := ""
	for j, r := range d.m.Rules {
		if d.dec.Failed[j] && !r.Shadow && r.OnFail == rules.FailClosed {
			name = r.Name
			break
		}
	}
	return status.Errorf(codes.Unavailable, "envoy: the rate-limit store failed, and rate limit %s fails closed", quote(name))
}

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

// unmatched answers a request refused, or let through, before any
// counting: every descriptor per u.
func (s *Service) unmatched(d *decision, u Unmatched) *rlsv3.RateLimitResponse {
	resp := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK, Statuses: make([]*rlsv3.RateLimitResponse_DescriptorStatus, len(d.answers))}
	for i, a := range d.answers {
		st := &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK}
		switch {
		case a == answerUnmatched && u == UnmatchedOverLimit, a == answerBanned && !d.limits[i].shadow:
			st.Code = rlsv3.RateLimitResponse_OVER_LIMIT
			resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
		case a == answerUnlimited:
			st.LimitRemaining = math.MaxUint32
		}
		st.CurrentLimit = currentLimit(d, i)
		resp.Statuses[i] = st
	}
	return resp
}

// currentLimit returns descriptor i's limit as the response states it, or
// nil.
func currentLimit(d *decision, i int) *rlsv3.RateLimitResponse_RateLimit {
	if d.over[i] != nil {
		return d.over[i]
	}
	if l := d.limits[i]; l != nil && !l.unlimited && (d.answers[i] == answerLimited || d.answers[i] == answerBanned) {
		return &rlsv3.RateLimitResponse_RateLimit{Name: l.name, RequestsPerUnit: l.rpu, Unit: l.unit}
	}
	return nil
}

// respond builds the response of a decided request.
func (s *Service) respond(d *decision, admitted bool) *rlsv3.RateLimitResponse {
	resp := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK, Statuses: make([]*rlsv3.RateLimitResponse_DescriptorStatus, len(d.answers))}
	if !admitted {
		resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
	}
	for i, a := range d.answers {
		st := &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK, CurrentLimit: currentLimit(d, i)}
		resp.Statuses[i] = st
		if a == answerUnlimited {
			st.LimitRemaining = math.MaxUint32
		}
		if a == answerBanned && !d.limits[i].shadow {
			st.Code = rlsv3.RateLimitResponse_OVER_LIMIT // a quota limit: the request may pass
		}
		j := d.hitOf[i]
		if j < 0 || !d.dec.Decided(j) {
			continue // not counted, or the store failed and the rule passes open
		}
		r := &d.dec.Results[j]
		st.LimitRemaining = uint32(min(max(r.Remaining, 0), math.MaxUint32))
		refused := !r.Allowed && !d.m.Rules[j].Shadow // a soft quota hit is refused, though it refuses nothing alone
		if refused {
			st.Code = rlsv3.RateLimitResponse_OVER_LIMIT
		}
		wait := r.ResetAfter
		if refused && !r.Unsatisfiable {
			wait = r.RetryAfter
		}
		st.DurationUntilReset = durationpb.New(wait)
	}
	resp.ResponseHeadersToAdd = s.headers(d, admitted)
	return resp
}

// headers returns the rate-limit header fields that describe the exposed
// rules the store decided, and Retry-After for a refused request that can
// pass later.
func (s *Service) headers(d *decision, admitted bool) []*corev3.HeaderValue {
	var policies []headers.Policy
	var results []sluice.Result
	for j, r := range d.m.Rules {
		if !r.Exposed() || !d.dec.Headers() || d.dec.Failed[j] {
			continue
		}
		res := d.dec.Results[j]
		// A rule two descriptors met appears once: as it binds most.
		if k := slices.IndexFunc(policies, func(p headers.Policy) bool { return p.Name == r.Name }); k >= 0 {
			if rules.BindingResult([]sluice.Result{results[k], res}, admitted) == 1 {
				policies[k].Result, results[k] = res, res
			}
			continue
		}
		policies = append(policies, headers.Policy{Name: r.Name, Result: res})
		results = append(results, res)
	}
	h := http.Header{}
	if s.cfg.headers != headers.None {
		if bind := rules.BindingResult(results, admitted); bind >= 0 {
			headers.Write(h, s.cfg.headers, policies, bind, s.cfg.now())
		}
	}
	if !admitted && !d.dec.Unsatisfiable() {
		headers.SetRetryAfter(h, d.dec.RetryAfter())
	}
	if len(h) == 0 {
		return nil
	}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]*corev3.HeaderValue, 0, len(keys))
	for _, k := range keys {
		for _, v := range h[k] {
			out = append(out, &corev3.HeaderValue{Key: strings.ToLower(k), Value: v})
		}
	}
	return out
}
