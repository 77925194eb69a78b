package envoy

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
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
	s := &Service{store: store}
	var err error
	if s.decider, err = decide.NewFrontEnd("envoy", store, &s.cfg, opts); err != nil {
		return nil, err
	}
	if s.cfg.registerer != nil {
		if s.metrics, err = newServiceMetrics(s.cfg.registerer); err != nil {
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
	o := s.decider.Decide(ctx, &d.m)
	defer o.Finish(ctx, 0)
	if o.Verdict == decide.Unavailable {
		return nil, unavailable(o)
	}
	if onlyPeeks(d.m.Hits) {
		// A request of checks only (hits_addend 0, which never refuse
		// beside descriptors that consume) is refused when one of them
		// found its cost missing.
		o.Refuse()
	}
	if !s.settleQuotas(ctx, d, o) {
		o.Refuse()
	}
	return s.respond(d, o), nil
}

// unavailable returns the error of a request the store failed while a
// limit fails closed: codes.Unavailable, naming the limit.
func unavailable(o *decide.Outcome) error {
	name := ""
	for j, r := range o.Rules {
		if o.Failed[j] && !r.Shadow && r.OnFail == rules.FailClosed {
			name = r.Name
			break
		}
	}
	return status.Errorf(codes.Unavailable, "envoy: the rate-limit store failed, and rate limit %s fails closed", quote(name))
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
func (s *Service) respond(d *decision, o *decide.Outcome) *rlsv3.RateLimitResponse {
	resp := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK, Statuses: make([]*rlsv3.RateLimitResponse_DescriptorStatus, len(d.answers))}
	if o.Verdict != decide.Admitted {
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
		if j < 0 || !o.Decided(j) {
			continue // not counted, or the store failed and the rule passes open
		}
		r := &o.Results[j]
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
	resp.ResponseHeadersToAdd = responseHeaders(o.Fields)
	return resp
}

// responseHeaders returns fields as the headers Envoy adds, names in lower
// case, in their order; nil for none.
func responseHeaders(fields []headers.Field) []*corev3.HeaderValue {
	if len(fields) == 0 {
		return nil
	}
	out := make([]*corev3.HeaderValue, len(fields))
	for i, f := range fields {
		out[i] = &corev3.HeaderValue{Key: strings.ToLower(f.Name), Value: f.Value}
	}
	slices.SortStableFunc(out, func(a, b *corev3.HeaderValue) int { return strings.Compare(a.Key, b.Key) })
	return out
}
