package envoy_test

import (
	"context"
	"errors"
	"github.com/sluicehq/sluice/decide"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/envoy"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// quiet discards the service's logs in tests that make the store fail.
var quiet = slog.New(slog.DiscardHandler)

const (
	ok   = rlsv3.RateLimitResponse_OK
	over = rlsv3.RateLimitResponse_OVER_LIMIT
)

// desc returns a descriptor of key, value pairs.
func desc(kv ...string) *ratelimitv3.RateLimitDescriptor {
	d := &ratelimitv3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &ratelimitv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// request returns a request of domain with descriptors.
func request(domain string, ds ...*ratelimitv3.RateLimitDescriptor) *rlsv3.RateLimitRequest {
	return &rlsv3.RateLimitRequest{Domain: domain, Descriptors: ds}
}

// memService returns a service over a memory store on a fake clock.
func memService(tb testing.TB, doc string, opts ...envoy.Option) (*envoy.Service, *storetest.Clock) {
	tb.Helper()
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1})
	tb.Cleanup(func() { _ = store.Close(context.Background()) })
	svc, err := envoy.New(store, mustMapping(tb, doc), opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return svc, clock
}

// codes returns the overall code and each descriptor's.
func codesOf(resp *rlsv3.RateLimitResponse) []rlsv3.RateLimitResponse_Code {
	out := []rlsv3.RateLimitResponse_Code{resp.OverallCode}
	for _, s := range resp.Statuses {
		out = append(out, s.Code)
	}
	return out
}

func sameCodes(a []rlsv3.RateLimitResponse_Code, b ...rlsv3.RateLimitResponse_Code) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// header returns the value of a response header to add, or "".
func header(resp *rlsv3.RateLimitResponse, name string) string {
	for _, h := range resp.ResponseHeadersToAdd {
		if h.Key == name {
			return h.Value
		}
	}
	return ""
}

func mustDecide(tb testing.TB, svc *envoy.Service, req *rlsv3.RateLimitRequest) *rlsv3.RateLimitResponse {
	tb.Helper()
	resp, err := svc.ShouldRateLimit(context.Background(), req)
	if err != nil {
		tb.Fatalf("ShouldRateLimit: %v", err)
	}
	return resp
}

const basic = `
domain: api
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 2, name: per-ip}
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 10, replaces: [{name: per-ip}]}
  - key: site
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: fixed
    rate_limit: {unit: minute, requests_per_unit: 1, algorithm: fixed_window}
  - key: generic_key
    value: login
    descriptors:
      - key: remote_address
        rate_limit: {unit: minute, requests_per_unit: 1, name: login-per-ip}
  - key: path
    value: "/static/*"
    share_threshold: true
    rate_limit: {unit: minute, requests_per_unit: 2, name: static}
  - key: path
    value: "/img/*"
    rate_limit: {unit: minute, requests_per_unit: 1, name: img}
  - key: agent
    value: batch
    rate_limit: {unlimited: true}
  - key: plan
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1, name: plan-shadow}
  - key: hidden
    rate_limit: {unit: minute, requests_per_unit: 1, expose: false}
`

// TestOverLimit: the third request of a 2-a-minute token bucket is
// OVER_LIMIT, with the time until a token is back as its reset, the
// RateLimit headers and Retry-After to add; the first two are OK.
func TestOverLimit(t *testing.T) {
	svc, clock := memService(t, basic)
	req := request("api", desc("remote_address", "10.0.0.1"))
	for i := range 2 {
		resp := mustDecide(t, svc, req)
		if !sameCodes(codesOf(resp), ok, ok) {
			t.Fatalf("request %d: %v", i+1, codesOf(resp))
		}
		st := resp.Statuses[0]
		if st.LimitRemaining != uint32(1-i) || st.CurrentLimit.GetName() != "per-ip" || st.CurrentLimit.GetRequestsPerUnit() != 2 || st.CurrentLimit.GetUnit() != rlsv3.RateLimitResponse_RateLimit_MINUTE {
			t.Errorf("request %d: status %v", i+1, st)
		}
	}
	clock.Advance(10 * time.Second)
	resp := mustDecide(t, svc, req)
	if !sameCodes(codesOf(resp), over, over) {
		t.Fatalf("third request: %v", codesOf(resp))
	}
	// One token every 30 s, the first taken 10 s ago: back in 20 s.
	if got := resp.Statuses[0].DurationUntilReset.AsDuration(); got != 20*time.Second {
		t.Errorf("DurationUntilReset = %v, want 20s", got)
	}
	if got := header(resp, "retry-after"); got != "20" {
		t.Errorf("retry-after = %q, want 20", got)
	}
	if got := header(resp, "ratelimit"); got != `"per-ip";r=0;t=20` {
		t.Errorf("ratelimit = %q", got)
	}
	if got := header(resp, "ratelimit-policy"); got != `"per-ip";q=2;w=60` {
		t.Errorf("ratelimit-policy = %q", got)
	}
	clock.Advance(20 * time.Second)
	if resp := mustDecide(t, svc, req); resp.OverallCode != ok {
		t.Errorf("after the reset: %v", codesOf(resp))
	}
}

// TestFixedWindowReset: a fixed window's reset is the time until the
// window ends, as envoyproxy/ratelimit reports it.
func TestFixedWindowReset(t *testing.T) {
	svc, clock := memService(t, basic)
	clock.Set(time.Unix(1_700_000_020, 0)) // 40 s into a minute
	req := request("api", desc("fixed", "x"))
	mustDecide(t, svc, req)
	resp := mustDecide(t, svc, req)
	if resp.OverallCode != over {
		t.Fatalf("second request: %v", codesOf(resp))
	}
	if got := resp.Statuses[0].DurationUntilReset.AsDuration(); got != 20*time.Second {
		t.Errorf("DurationUntilReset = %v, want 20s (the end of the window)", got)
	}
}

// TestRefusedRequestConsumesNothing: a request one descriptor refuses
// consumes nothing in its other descriptors.
func TestRefusedRequestConsumesNothing(t *testing.T) {
	svc, _ := memService(t, basic)
	both := request("api", desc("site", "shop"), desc("remote_address", "10.0.0.2"))
	for range 2 {
		if resp := mustDecide(t, svc, both); resp.OverallCode != ok {
			t.Fatalf("within the limits: %v", codesOf(resp))
		}
	}
	for range 5 {
		resp := mustDecide(t, svc, both)
		if !sameCodes(codesOf(resp), over, ok, over) {
			t.Fatalf("per-ip exhausted: %v", codesOf(resp))
		}
		// The site descriptor passed on its own: it reports what is left
		// without this request.
		if got := resp.Statuses[0].LimitRemaining; got != 3 {
			t.Fatalf("site remaining %d in a refused request, want 3", got)
		}
	}
	resp := mustDecide(t, svc, request("api", desc("site", "shop")))
	if resp.OverallCode != ok || resp.Statuses[0].LimitRemaining != 2 {
		t.Errorf("site after 5 refused requests: %v remaining %d, want OK and 2 (only the admitted requests counted)", codesOf(resp), resp.Statuses[0].LimitRemaining)
	}
}

// TestMatching: descriptors find their limits as in envoyproxy/ratelimit,
// each with its own buckets: by value, by pattern (shared or not), nested,
// unlimited, replaced, shadow, and not at all.
func TestMatching(t *testing.T) {
	tests := []struct {
		name  string
		first *rlsv3.RateLimitRequest // decided once before
		req   *rlsv3.RateLimitRequest
		want  []rlsv3.RateLimitResponse_Code
		limit string // the first status's current limit, "" for none
	}{
		{"nested limit", request("api", desc("generic_key", "login", "remote_address", "a")), request("api", desc("generic_key", "login", "remote_address", "a")), []rlsv3.RateLimitResponse_Code{over, over}, "login-per-ip"},
		{"nested, another address", request("api", desc("generic_key", "login", "remote_address", "a")), request("api", desc("generic_key", "login", "remote_address", "b")), []rlsv3.RateLimitResponse_Code{ok, ok}, "login-per-ip"},
		{"nested descriptor, entry missing", nil, request("api", desc("generic_key", "login")), []rlsv3.RateLimitResponse_Code{ok, ok}, ""},
		{"more entries than the mapping", nil, request("api", desc("remote_address", "a", "extra", "x")), []rlsv3.RateLimitResponse_Code{ok, ok}, ""},
		{"shared pattern", request("api", desc("path", "/static/a.css"), desc("path", "/static/b.css")), request("api", desc("path", "/static/c.css")), []rlsv3.RateLimitResponse_Code{over, over}, "static"},
		{"pattern, a bucket per value", request("api", desc("path", "/img/a.png")), request("api", desc("path", "/img/b.png")), []rlsv3.RateLimitResponse_Code{ok, ok}, "img"},
		{"unlimited", nil, request("api", desc("agent", "batch"), desc("agent", "batch")), []rlsv3.RateLimitResponse_Code{ok, ok, ok}, ""},
		{"unknown key", nil, request("api", desc("nope", "x")), []rlsv3.RateLimitResponse_Code{ok, ok}, ""},
		{"replaced", request("api", desc("remote_address", "r"), desc("remote_address", "r")), request("api", desc("remote_address", "r"), desc("user", "u")), []rlsv3.RateLimitResponse_Code{ok, ok, ok}, ""},
		{"shadow never refuses", request("api", desc("plan", "free")), request("api", desc("plan", "free")), []rlsv3.RateLimitResponse_Code{ok, ok}, "plan-shadow"},
		{"hidden still refuses", request("api", desc("hidden", "h")), request("api", desc("hidden", "h")), []rlsv3.RateLimitResponse_Code{over, over}, "api.hidden"},
		{"unknown domain", nil, request("elsewhere", desc("remote_address", "x")), []rlsv3.RateLimitResponse_Code{ok, ok}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, _ := memService(t, basic)
			if tt.first != nil {
				mustDecide(t, svc, tt.first)
			}
			resp := mustDecide(t, svc, tt.req)
			if !sameCodes(codesOf(resp), tt.want...) {
				t.Errorf("codes %v, want %v", codesOf(resp), tt.want)
			}
			if got := resp.Statuses[0].CurrentLimit.GetName(); got != tt.limit {
				t.Errorf("current limit %q, want %q", got, tt.limit)
			}
		})
	}
}

// TestShadowAndHiddenHeaders: shadow and unexposed limits never appear in
// the headers; a hidden limit's refusal still gets Retry-After.
func TestShadowAndHiddenHeaders(t *testing.T) {
	svc, _ := memService(t, basic)
	req := request("api", desc("plan", "p"), desc("hidden", "h"))
	mustDecide(t, svc, req)
	resp := mustDecide(t, svc, req)
	if !sameCodes(codesOf(resp), over, ok, over) {
		t.Fatalf("codes %v", codesOf(resp))
	}
	for _, h := range resp.ResponseHeadersToAdd {
		if strings.Contains(h.Value, "plan-shadow") || strings.Contains(h.Value, "hidden") {
			t.Errorf("header %s: %s names a shadow or hidden limit", h.Key, h.Value)
		}
	}
	if header(resp, "retry-after") != "60" {
		t.Errorf("retry-after = %q, want 60", header(resp, "retry-after"))
	}
}

// TestUnmatchedOverLimit: a mapping with unmatched: over_limit refuses a
// descriptor no limit applies to, and the request consumes nothing.
func TestUnmatchedOverLimit(t *testing.T) {
	svc, _ := memService(t, `
domain: strict
unmatched: over_limit
descriptors:
  - key: tenant
    rate_limit: {unit: minute, requests_per_unit: 3}
`)
	resp := mustDecide(t, svc, request("strict", desc("tenant", "t"), desc("surprise", "x")))
	if !sameCodes(codesOf(resp), over, ok, over) {
		t.Fatalf("codes %v", codesOf(resp))
	}
	resp = mustDecide(t, svc, request("strict", desc("tenant", "t")))
	if resp.OverallCode != ok || resp.Statuses[0].LimitRemaining != 2 {
		t.Errorf("tenant after a refused request: %v remaining %d, want OK, 2", codesOf(resp), resp.Statuses[0].LimitRemaining)
	}
}

// TestUnknownDomainOption: WithUnknownDomain refuses the domains the
// mapping does not define.
func TestUnknownDomainOption(t *testing.T) {
	svc, _ := memService(t, basic, envoy.WithUnknownDomain(envoy.UnmatchedOverLimit))
	if resp := mustDecide(t, svc, request("elsewhere", desc("k", "v"))); resp.OverallCode != over {
		t.Errorf("unknown domain: %v, want OVER_LIMIT", codesOf(resp))
	}
	if resp := mustDecide(t, svc, request("api", desc("k", "v"))); resp.OverallCode != ok {
		t.Errorf("known domain, unmatched key: %v, want OK", codesOf(resp))
	}
}

// TestHitsAddend: the cost is the descriptor's hits_addend, else the
// request's; a descriptor's 0 checks without consuming; a cost beyond the
// capacity is over the limit with no Retry-After.
func TestHitsAddend(t *testing.T) {
	svc, _ := memService(t, basic)
	site := desc("site", "s")
	req := request("api", site)
	req.HitsAddend = 3
	if resp := mustDecide(t, svc, req); resp.Statuses[0].LimitRemaining != 2 {
		t.Fatalf("after a cost of 3: remaining %d, want 2", resp.Statuses[0].LimitRemaining)
	}
	check := desc("site", "s")
	check.HitsAddend = wrapperspb.UInt64(0)
	for range 3 {
		resp := mustDecide(t, svc, request("api", check))
		if resp.OverallCode != ok || resp.Statuses[0].LimitRemaining != 2 {
			t.Fatalf("a check: %v remaining %d, want OK and 2 (nothing consumed)", codesOf(resp), resp.Statuses[0].LimitRemaining)
		}
	}
	two := desc("site", "s")
	two.HitsAddend = wrapperspb.UInt64(2)
	req = request("api", two)
	req.HitsAddend = 9 // the descriptor's own wins
	mustDecide(t, svc, req)
	if resp := mustDecide(t, svc, request("api", check)); !sameCodes(codesOf(resp), over, over) {
		t.Errorf("a check of an empty bucket: %v, want OVER_LIMIT", codesOf(resp))
	}
	huge := desc("site", "other")
	huge.HitsAddend = wrapperspb.UInt64(6)
	resp := mustDecide(t, svc, request("api", huge))
	if resp.OverallCode != over || header(resp, "retry-after") != "" {
		t.Errorf("a cost beyond the capacity: %v retry-after %q, want OVER_LIMIT without retry-after", codesOf(resp), header(resp, "retry-after"))
	}
}

// TestLimitOverride: a descriptor's limit replaces its limit's rate.
func TestLimitOverride(t *testing.T) {
	svc, _ := memService(t, basic)
	d := desc("site", "o")
	d.Limit = &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_HOUR}
	resp := mustDecide(t, svc, request("api", d))
	if cl := resp.Statuses[0].CurrentLimit; cl.GetRequestsPerUnit() != 1 || cl.GetUnit() != rlsv3.RateLimitResponse_RateLimit_HOUR || cl.GetName() != "api.site" {
		t.Errorf("current limit %v", cl)
	}
	if resp := mustDecide(t, svc, request("api", d)); resp.OverallCode != over {
		t.Errorf("second request at 1 an hour: %v", codesOf(resp))
	}
	u := desc("unmapped", "u")
	u.Limit = &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_SECOND}
	mustDecide(t, svc, request("api", u))
	if resp := mustDecide(t, svc, request("api", u)); resp.OverallCode != over || resp.Statuses[0].CurrentLimit.GetName() != "api.limit_override" {
		t.Errorf("an override of an unmapped descriptor: %v %v", codesOf(resp), resp.Statuses[0].CurrentLimit)
	}
}

// TestMalformedRequests: each is InvalidArgument, saying what is wrong.
func TestMalformedRequests(t *testing.T) {
	svc, _ := memService(t, basic)
	many := request("api")
	for range envoy.MaxDescriptors + 1 {
		many.Descriptors = append(many.Descriptors, desc("k", "v"))
	}
	negative := desc("site", "s")
	negative.IsNegativeHits = true
	big := desc("site", "s")
	big.HitsAddend = wrapperspb.UInt64(1 << 60)
	zeroOverride := desc("site", "s")
	zeroOverride.Limit = &ratelimitv3.RateLimitDescriptor_RateLimitOverride{Unit: typev3.RateLimitUnit_SECOND}
	badUnit := desc("site", "s")
	badUnit.Limit = &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1}
	tooFast := desc("site", "s")
	tooFast.Limit = &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 4_000_000_000, Unit: typev3.RateLimitUnit_SECOND}
	tests := []struct {
		name string
		req  *rlsv3.RateLimitRequest
		want string
	}{
		{"nil", nil, "envoy: no request"},
		{"no domain", request("", desc("k", "v")), "envoy: the request has no domain"},
		{"no descriptors", request("api"), "envoy: the request has no descriptors"},
		{"too many descriptors", many, "envoy: the request has 65 descriptors, more than 64"},
		{"null descriptor", request("api", desc("k", "v"), nil), "envoy: descriptors[1]: null descriptor"},
		{"no entries", request("api", desc()), "envoy: descriptors[0]: no entries"},
		{"empty key", request("api", desc("k", "v", "", "x")), "envoy: descriptors[0]: entries[1]: empty key"},
		{"long value", request("api", desc("k", strings.Repeat("v", envoy.MaxEntryLen+1))), `envoy: descriptors[0]: entries[0] (key "k"): value longer than 4096 bytes`},
		{"negative hits", request("api", negative), "envoy: descriptors[0]: is_negative_hits is not supported"},
		{"huge hits_addend", request("api", big), "envoy: descriptors[0]: hits_addend 1152921504606846976 is more than 1125899906842624"},
		{"override of 0", request("api", zeroOverride), "envoy: descriptors[0]: limit.requests_per_unit is 0"},
		{"override without unit", request("api", badUnit), "envoy: descriptors[0]: limit.unit UNKNOWN is not a unit"},
		{"override too fast", request("api", tooFast), "envoy: descriptors[0]: limit: 4000000000 per 1 SECOND with token_bucket: rate 4000000000 per 1s: at most one event per microsecond"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := svc.ShouldRateLimit(context.Background(), tt.req)
			if status.Code(err) != codes.InvalidArgument || resp != nil {
				t.Fatalf("got %v, %v; want InvalidArgument", resp, err)
			}
			if msg := status.Convert(err).Message(); msg != tt.want && !strings.HasPrefix(msg, tt.want) {
				t.Errorf("message %q, want %q", msg, tt.want)
			}
		})
	}
}

// failingStore fails every call as an unavailable Redis would.
type failingStore struct{}

func (failingStore) Take(context.Context, []sluice.Hit, []sluice.Result) error {
	return &sluice.StoreError{Op: "test: take", Kind: sluice.ErrUnavailable}
}

// TestStoreFailure: when the store fails, each limit applies its on_fail:
// open passes, closed answers Unavailable, local decides in process on the
// limit's share.
func TestStoreFailure(t *testing.T) {
	m := mustMapping(t, `
domain: f
descriptors:
  - key: open
    rate_limit: {unit: minute, requests_per_unit: 1, on_fail: open}
  - key: closed
    rate_limit: {unit: minute, requests_per_unit: 1, on_fail: closed}
  - key: local
    rate_limit: {unit: minute, requests_per_unit: 4}
`)
	svc, err := envoy.New(failingStore{}, m, decide.WithInstances(2), decide.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if resp := mustDecide(t, svc, request("f", desc("open", "x"))); resp.OverallCode != ok {
			t.Fatalf("open: %v", codesOf(resp))
		}
	}
	_, err = svc.ShouldRateLimit(context.Background(), request("f", desc("open", "x"), desc("closed", "x")))
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), `rate limit "f.closed" fails closed`) {
		t.Errorf("closed: %v, want Unavailable naming the limit", err)
	}
	// 4 a minute shared by 2 instances: 2 here.
	for i, want := range []rlsv3.RateLimitResponse_Code{ok, ok, over} {
		if resp := mustDecide(t, svc, request("f", desc("local", "x"))); resp.OverallCode != want {
			t.Errorf("local request %d: %v, want %v", i+1, codesOf(resp), want)
		}
	}
}

// TestSlowStoreBudget: a store slower than the budget counts as failed.
func TestSlowStoreBudget(t *testing.T) {
	m := mustMapping(t, "domain: s\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1, on_fail: closed}\n")
	svc, err := envoy.New(slowStore{}, m, decide.WithBudget(20*time.Millisecond), decide.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = svc.ShouldRateLimit(context.Background(), request("s", desc("k", "v")))
	if status.Code(err) != codes.Unavailable {
		t.Errorf("got %v, want Unavailable", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v: the budget did not bound the call", d)
	}
}

type slowStore struct{}

func (slowStore) Take(ctx context.Context, _ []sluice.Hit, _ []sluice.Result) error {
	<-ctx.Done()
	return &sluice.StoreError{Op: "test: take", Kind: sluice.ErrTimeout, Ambiguous: true, Err: ctx.Err()}
}

// TestOptions: required arguments and invalid options are refused with
// errors wrapping sluice.ErrInvalidConfig.
func TestOptions(t *testing.T) {
	m := mustMapping(t, basic)
	store := memstore.New(memstore.Config{SweepInterval: -1})
	tests := []struct {
		name  string
		store sluice.Store
		m     *envoy.Mapping
		opts  []envoy.Option
		want  string
	}{
		{"nil store", nil, m, nil, "envoy: New: nil store"},
		{"nil mapping", store, nil, nil, "envoy: New: nil mapping"},
		{"nil option", store, m, []envoy.Option{nil}, "envoy: nil Option"},
		{"budget", store, m, []envoy.Option{decide.WithBudget(0)}, "envoy: WithBudget: 0s: must be positive"},
		{"headers", store, m, []envoy.Option{decide.WithHeaders(headers.Mode(64))}, "envoy: WithHeaders"},
		{"observer", store, m, []envoy.Option{decide.WithObserver(nil)}, "envoy: WithObserver: nil observer"},
		{"logger", store, m, []envoy.Option{decide.WithLogger(nil)}, "envoy: WithLogger: nil logger"},
		{"instances", store, m, []envoy.Option{decide.WithInstances(0)}, "envoy: WithInstances: 0: must be at least 1"},
		{"unknown domain", store, m, []envoy.Option{envoy.WithUnknownDomain(9)}, "envoy: WithUnknownDomain"},
		{"registerer", store, m, []envoy.Option{envoy.WithRegisterer(nil)}, "envoy: WithRegisterer: nil registerer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := envoy.New(tt.store, tt.m, tt.opts...)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || !errors.Is(err, sluice.ErrInvalidConfig) {
				t.Errorf("New = %v, want %q wrapping sluice.ErrInvalidConfig", err, tt.want)
			}
		})
	}
}

// TestHeaderModes: WithHeaders selects the fields; none still sends
// Retry-After on a refusal.
func TestHeaderModes(t *testing.T) {
	for _, tt := range []struct {
		mode headers.Mode
		want []string
	}{
		{headers.Draft06, []string{"ratelimit-limit", "ratelimit-policy", "ratelimit-remaining", "ratelimit-reset", "retry-after"}},
		{headers.XRateLimit, []string{"retry-after", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"}},
		{headers.None, []string{"retry-after"}},
	} {
		t.Run(tt.mode.String(), func(t *testing.T) {
			svc, _ := memService(t, basic, decide.WithHeaders(tt.mode))
			req := request("api", desc("fixed", "f"))
			mustDecide(t, svc, req)
			resp := mustDecide(t, svc, req)
			var got []string
			for _, h := range resp.ResponseHeadersToAdd {
				got = append(got, h.Key)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("headers %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSetMapping: a new mapping decides the next requests; limits that
// keep their names keep their buckets.
func TestSetMapping(t *testing.T) {
	svc, _ := memService(t, basic)
	req := request("api", desc("remote_address", "s"))
	mustDecide(t, svc, req)
	if err := svc.SetMapping(nil); err == nil {
		t.Error("SetMapping(nil) accepted")
	}
	if err := svc.SetMapping(mustMapping(t, "domain: api\ndescriptors:\n  - key: remote_address\n    rate_limit: {unit: minute, requests_per_unit: 1, name: per-ip}\n")); err != nil {
		t.Fatal(err)
	}
	if resp := mustDecide(t, svc, req); resp.OverallCode != over {
		t.Errorf("after lowering per-ip to 1 with one request counted: %v", codesOf(resp))
	}
}

// TestServiceMetrics: the service counts requests by domain and code, and
// descriptors by how the mapping answered them, unknown domains under one
// label.
func TestServiceMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	svc, _ := memService(t, basic, envoy.WithRegisterer(reg))
	mustDecide(t, svc, request("api", desc("fixed", "m"), desc("agent", "batch"), desc("nope", "n")))
	mustDecide(t, svc, request("api", desc("fixed", "m")))
	mustDecide(t, svc, request("random-"+t.Name(), desc("k", "v")))
	_, _ = svc.ShouldRateLimit(context.Background(), request("api"))
	want := `
# HELP sluice_envoy_descriptors_total Descriptors of well-formed requests, by domain and how the mapping answered them (limited, unlimited, replaced, unmatched).
# TYPE sluice_envoy_descriptors_total counter
sluice_envoy_descriptors_total{domain="__unknown__",match="unmatched"} 1
sluice_envoy_descriptors_total{domain="api",match="limited"} 2
sluice_envoy_descriptors_total{domain="api",match="unlimited"} 1
sluice_envoy_descriptors_total{domain="api",match="unmatched"} 1
# HELP sluice_envoy_requests_total ShouldRateLimit calls, by domain and answer (ok, over_limit, invalid_argument, unavailable, error).
# TYPE sluice_envoy_requests_total counter
sluice_envoy_requests_total{code="ok",domain="__unknown__"} 1
sluice_envoy_requests_total{code="invalid_argument",domain="api"} 1
sluice_envoy_requests_total{code="ok",domain="api"} 1
sluice_envoy_requests_total{code="over_limit",domain="api"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "sluice_envoy_requests_total", "sluice_envoy_descriptors_total"); err != nil {
		t.Error(err)
	}
	if _, err := envoy.New(memstore.New(memstore.Config{SweepInterval: -1}), mustMapping(t, basic), envoy.WithRegisterer(reg)); err == nil || !errors.Is(err, sluice.ErrInvalidConfig) {
		t.Errorf("registering twice: %v", err)
	}
}

// TestObserver: every counted descriptor's decision reaches the observer,
// named by its limit.
func TestObserver(t *testing.T) {
	var got []string
	obs := sluice.ObserverFunc(func(_ context.Context, d sluice.Decision) { got = append(got, d.Rule+":"+d.Outcome.String()) })
	svc, _ := memService(t, basic, decide.WithObserver(obs))
	req := request("api", desc("fixed", "o"), desc("plan", "p"))
	mustDecide(t, svc, req)
	mustDecide(t, svc, req)
	want := "api.fixed:allowed,plan-shadow:allowed,api.fixed:denied,plan-shadow:shadow_denied"
	if strings.Join(got, ",") != want {
		t.Errorf("decisions %v, want %s", got, want)
	}
}

// TestHealthHandler: a service over a memory store is ready and lists its
// domains.
func TestHealthHandler(t *testing.T) {
	svc, _ := memService(t, basic)
	rec := httptest.NewRecorder()
	svc.HealthHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"ready":true`) || !strings.Contains(rec.Body.String(), `"domains":["api"]`) {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
}

// TestUnlimitedRemaining: an unlimited descriptor reports the most
// remaining a status can.
func TestUnlimitedRemaining(t *testing.T) {
	svc, _ := memService(t, basic)
	resp := mustDecide(t, svc, request("api", desc("agent", "batch")))
	if resp.Statuses[0].LimitRemaining != math.MaxUint32 {
		t.Errorf("remaining %d", resp.Statuses[0].LimitRemaining)
	}
}
