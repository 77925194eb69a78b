package envoy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/sluicehq/sluice/envoy"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// banned is envoyproxy/ratelimit's reload.yaml (its integration test's
// way to ban a value: requests_per_unit 0), with a shadow ban beside it.
const banned = `
domain: reload
descriptors:
  - key: key1
    rate_limit:
      unit: second
      requests_per_unit: 50
  - key: block
    rate_limit:
      unit: second
      requests_per_unit: 0
  - key: trial
    shadow_mode: true
    rate_limit: {unit: second, requests_per_unit: 0}
  - key: vip
    rate_limit: {unit: minute, requests_per_unit: 5, replaces: [{name: reload.block}]}
`

// TestBannedValue: a descriptor whose limit is requests_per_unit 0 is
// always OVER_LIMIT, with no time to wait (no reset, no Retry-After), even
// when it only checks (hits_addend 0); the request consumes nothing in its
// other descriptors. In shadow mode it is OK; a limit that replaces it,
// or an override, lifts the ban.
func TestBannedValue(t *testing.T) {
	svc, _ := memService(t, banned)
	for _, req := range []*rlsv3.RateLimitRequest{
		request("reload", desc("block", "x")),
		request("reload", desc("key1", "a"), desc("block", "x")),
		request("reload", &ratelimitv3.RateLimitDescriptor{Entries: desc("block", "x").Entries, HitsAddend: wrapperspb.UInt64(0)}),
	} {
		resp := mustDecide(t, svc, req)
		last := resp.Statuses[len(resp.Statuses)-1]
		if resp.OverallCode != over || last.Code != over {
			t.Fatalf("%v: %v", req.Descriptors, codesOf(resp))
		}
		cur := last.CurrentLimit
		if cur.GetRequestsPerUnit() != 0 || cur.GetUnit() != rlsv3.RateLimitResponse_RateLimit_SECOND || cur.GetName() != "reload.block" {
			t.Errorf("current_limit %v", cur)
		}
		if last.DurationUntilReset != nil || last.LimitRemaining != 0 || header(resp, "retry-after") != "" {
			t.Errorf("a ban has a time to wait: %v, retry-after %q", last, header(resp, "retry-after"))
		}
	}
	// key1 consumed nothing while block refused the request.
	if resp := mustDecide(t, svc, request("reload", desc("key1", "a"))); resp.Statuses[0].LimitRemaining != 49 {
		t.Errorf("key1 after the refused request: %v", resp.Statuses[0])
	}
	for _, req := range []*rlsv3.RateLimitRequest{
		request("reload", desc("trial", "x")),
		request("reload", desc("vip", "v"), desc("block", "x")),
		request("reload", &ratelimitv3.RateLimitDescriptor{Entries: desc("block", "x").Entries,
			Limit: &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 3, Unit: typev3.RateLimitUnit_MINUTE}}),
	} {
		if resp := mustDecide(t, svc, req); resp.OverallCode != ok {
			t.Errorf("%v: %v", req.Descriptors, codesOf(resp))
		}
	}
}

// quotas has two quota limits and a regular one, as example.yaml's
// service_1 and service_2.
const quotas = `
domain: rl
descriptors:
  - key: service
    value: service_1
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: service
    value: service_2
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: service
    value: banned
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 0}
  - key: regular
    rate_limit: {unit: minute, requests_per_unit: 5}
`

// TestQuotaMode: quota limits let a request through until all of its
// quota limits are over; each reports its own status; a regular limit
// still refuses alone; and a refused request consumes nothing.
func TestQuotaMode(t *testing.T) {
	svc, _ := memService(t, quotas)
	s1, s2 := desc("service", "service_1"), desc("service", "service_2")
	both := request("rl", s1, s2)
	for i, want := range [][]rlsv3.RateLimitResponse_Code{
		{ok, ok, ok},       // s1 1 → 0, s2 2 → 1
		{ok, over, ok},     // s1 over, s2 1 → 0: one quota passes
		{over, over, over}, // both over: refused
	} {
		resp := mustDecide(t, svc, both)
		if got := codesOf(resp); !sameCodes(got, want...) {
			t.Fatalf("request %d: %v, want %v", i+1, got, want)
		}
		// Refused, it waits for the longest of its quota limits: s1's
		// minute, s2's half minute.
		if want[0] == over && header(resp, "retry-after") != "60" {
			t.Errorf("request %d: retry-after %q, want 60", i+1, header(resp, "retry-after"))
		}
	}
	// One quota limit alone refuses as any limit does; with a banned
	// quota limit beside it, it still decides.
	svc, _ = memService(t, quotas)
	alone := request("rl", s1)
	if got := codesOf(mustDecide(t, svc, alone)); !sameCodes(got, ok, ok) {
		t.Fatalf("alone, first: %v", got)
	}
	if got := codesOf(mustDecide(t, svc, alone)); !sameCodes(got, over, over) {
		t.Fatalf("alone, second: %v", got)
	}
	if got := codesOf(mustDecide(t, svc, request("rl", s2, desc("service", "banned")))); !sameCodes(got, ok, ok, over) {
		t.Fatalf("beside a banned quota: %v", got)
	}
	if got := codesOf(mustDecide(t, svc, request("rl", desc("service", "banned")))); !sameCodes(got, over, over) {
		t.Fatalf("a banned quota alone: %v", got)
	}

	// All quotas over: the regular limit, which passed, gives back what it
	// took. The regular limit over: the quota limits keep nothing.
	svc, _ = memService(t, quotas)
	mustDecide(t, svc, alone) // s1: 0 left
	mustDecide(t, svc, request("rl", s2))
	mustDecide(t, svc, request("rl", s2)) // s2: 0 left
	if got := codesOf(mustDecide(t, svc, request("rl", desc("regular", "r"), s1, s2))); !sameCodes(got, over, ok, over, over) {
		t.Fatalf("all quotas over: %v", got)
	}
	if st := mustDecide(t, svc, request("rl", desc("regular", "r"))).Statuses[0]; st.LimitRemaining != 4 {
		t.Errorf("regular after a request its quotas refused: %d left, want 4", st.LimitRemaining)
	}
	svc, _ = memService(t, quotas)
	for range 5 {
		mustDecide(t, svc, request("rl", desc("regular", "q")))
	}
	if got := codesOf(mustDecide(t, svc, request("rl", desc("regular", "q"), s1, s2))); !sameCodes(got, over, over, ok, ok) {
		t.Fatalf("regular over: %v", got)
	}
	if got := codesOf(mustDecide(t, svc, both)); !sameCodes(got, ok, ok, ok) {
		t.Errorf("quotas after a request the regular limit refused: %v, want them untouched", got)
	}
}

// metadataMapping is envoyproxy/ratelimit's metadata.yaml, with a
// descriptor whose metadata merges with key2's.
const metadataMapping = `
domain: test-domain
descriptors:
  - key: key1
    value: value1
    descriptors:
      - key: subkey1
        rate_limit:
          unit: second
          requests_per_unit: 5
        metadata:
          name: service_1
      - key: subkey1
        value: subvalue1
        rate_limit:
          unit: second
          requests_per_unit: 10
  - key: key2
    rate_limit:
      unit: minute
      requests_per_unit: 1
    metadata:
      service_with_quota:
        name: service_2
  - key: key3
    rate_limit: {unit: minute, requests_per_unit: 1}
    metadata: {service_with_quota: {name: ignored, tier: 2}, name: ignored, list: [a, 1, true, ~]}
`

// TestDynamicMetadata: with WithDynamicMetadata a response carries the
// domain, the descriptors and the metadata of the limits that passed,
// merged in the request's order, as envoyproxy/ratelimit returns it with
// RESPONSE_DYNAMIC_METADATA=true; without it, none.
func TestDynamicMetadata(t *testing.T) {
	req := request("test-domain", desc("key1", "value1", "subkey1", "x"), desc("key2", "y"), desc("key3", "z"))
	req.HitsAddend = 1
	svc, _ := memService(t, metadataMapping, envoy.WithDynamicMetadata())
	resp := mustDecide(t, svc, req)
	want := `{"descriptors":[{"entries":["key1=value1","subkey1=x"]},{"entries":["key2=y"]},{"entries":["key3=z"]}],` +
		`"domain":"test-domain","hitsAddend":1,` +
		`"metadata":{"list":["a",1,true,null],"name":"service_1","service_with_quota":{"name":"service_2","tier":2}}}`
	if got := compactJSON(t, resp); got != want {
		t.Errorf("dynamic metadata\n  %s\nwant\n  %s", got, want)
	}
	// key2 and key3 are over now: only key1's metadata passes.
	resp = mustDecide(t, svc, req)
	if got := compactJSON(t, resp); !strings.Contains(got, `"metadata":{"name":"service_1"}`) {
		t.Errorf("after key2 and key3 went over: %s", got)
	}
	// The mapping's metadata is unchanged by the merges: key2's has not
	// taken key3's tier.
	resp = mustDecide(t, svc, request("test-domain", desc("key2", "other")))
	if got := compactJSON(t, resp); !strings.Contains(got, `"metadata":{"service_with_quota":{"name":"service_2"}}`) {
		t.Errorf("key2 alone, after the merges: %s", got)
	}
	svc3, _ := memService(t, metadataMapping)
	if resp := mustDecide(t, svc3, req); resp.DynamicMetadata != nil {
		t.Errorf("without WithDynamicMetadata: %v", resp.DynamicMetadata)
	}
}

// tempFile writes doc to the file name in dir and returns its path.
func tempFile(tb testing.TB, dir, name, doc string) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// memStore returns a memory store on a fake clock.
func memStore(tb testing.TB) *memstore.Store {
	store := memstore.New(memstore.Config{Clock: storetest.NewClock(time.Unix(1_700_000_000, 0)), SweepInterval: -1})
	tb.Cleanup(func() { _ = store.Close(context.Background()) })
	return store
}

func compactJSON(t *testing.T, resp *rlsv3.RateLimitResponse) string {
	t.Helper()
	b, err := protojson.Marshal(resp.DynamicMetadata)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(b)), "")
}

// TestMergeDomains: with MergeDomains, several files define one domain
// together: their limits all apply, replaces reaches across them, and a
// top-level descriptor or a limit name given twice is refused, as are
// documents that disagree on unmatched; without it, a domain in two files
// is refused.
func TestMergeDomains(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string { return tempFile(t, dir, name, doc) }
	a := write("a.yaml", "domain: d\nunmatched: over_limit\ndescriptors:\n  - key: k1\n    rate_limit: {unit: minute, requests_per_unit: 1, name: first}\n")
	b := write("b.yaml", "domain: d\ndescriptors:\n  - key: k2\n    rate_limit: {unit: minute, requests_per_unit: 2, replaces: [{name: first}]}\n")
	m, err := envoy.LoadMapping([]string{a, b}, envoy.MergeDomains())
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Rules("d").Len(); got != 2 {
		t.Fatalf("%d rules, want 2", got)
	}
	svc, err := envoy.New(memStore(t), m)
	if err != nil {
		t.Fatal(err)
	}
	// k2 replaces k1 (across files); unmatched: over_limit holds for both.
	for _, tc := range []struct {
		req  *rlsv3.RateLimitRequest
		want []rlsv3.RateLimitResponse_Code
	}{
		{request("d", desc("k1", "x"), desc("k2", "x")), []rlsv3.RateLimitResponse_Code{ok, ok, ok}},
		{request("d", desc("k1", "x"), desc("k2", "x")), []rlsv3.RateLimitResponse_Code{ok, ok, ok}},
		{request("d", desc("k2", "x")), []rlsv3.RateLimitResponse_Code{over, over}},
		{request("d", desc("k3", "x")), []rlsv3.RateLimitResponse_Code{over, over}},
	} {
		if got := codesOf(mustDecide(t, svc, tc.req)); !sameCodes(got, tc.want...) {
			t.Errorf("%v: %v, want %v", tc.req.Descriptors, got, tc.want)
		}
	}
	for _, tc := range []struct {
		files []string
		opts  []envoy.MappingOption
		want  string
	}{
		{[]string{a, b}, nil, b + `:1: domain "d": domain: defined twice (first at ` + a + `:1)`},
		{[]string{a, write("c.yaml", "domain: d\ndescriptors:\n  - key: k9\n  - key: k1\n")}, []envoy.MappingOption{envoy.MergeDomains()},
			`c.yaml:4: domain "d": descriptors[1]: a second descriptor with key "k1" at the top of the domain (first at ` + a + `:4)`},
		{[]string{a, write("e.yaml", "domain: d\ndescriptors:\n  - key: k5\n    rate_limit: {unit: minute, requests_per_unit: 1, name: first}\n")}, []envoy.MappingOption{envoy.MergeDomains()},
			`e.yaml:4: domain "d": descriptors[0].rate_limit.name: "first" names two rate limits of the domain (first at ` + a + `:5)`},
		{[]string{a, write("f.yaml", "domain: d\nunmatched: ok\n")}, []envoy.MappingOption{envoy.MergeDomains()},
			`f.yaml:2: domain "d": unmatched: ok here, over_limit at ` + a + `:2: the documents of a merged domain agree on it`},
		{[]string{write("g.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1, replaces: [{name: nowhere}]}\n"), b}, []envoy.MappingOption{envoy.MergeDomains()},
			`g.yaml:4: domain "d": descriptors[0].rate_limit.replaces[0].name: "nowhere" names no rate limit of the domain`},
	} {
		_, err := envoy.LoadMapping(tc.files, tc.opts...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadMapping(%v) = %v, want %s", tc.files, err, tc.want)
		}
	}
	// The documents of one file merge too.
	if _, err := envoy.ParseMapping("two.yaml", []byte("domain: d\n---\ndomain: d\ndescriptors: [{key: k}]\n"), envoy.MergeDomains()); err != nil {
		t.Errorf("one file, two documents: %v", err)
	}
}

// TestRedisQuotaMode: on Redis, a request refused because all of its
// quota limits are over gives back what its regular limit took, and a
// banned value is refused without a store call's consumption.
func TestRedisQuotaMode(t *testing.T) {
	c := redisService(t, quotas)
	s1, s2, reg := desc("service", "service_1"), desc("service", "service_2"), desc("regular", "r")
	call(t, c, request("rl", s1))
	call(t, c, request("rl", s2))
	call(t, c, request("rl", s2))
	if got := codesOf(call(t, c, request("rl", reg, s1, s2))); !sameCodes(got, over, ok, over, over) {
		t.Fatalf("all quotas over: %v", got)
	}
	if got := codesOf(call(t, c, request("rl", reg, desc("service", "banned")))); !sameCodes(got, over, ok, over) {
		t.Fatalf("a banned quota: %v", got)
	}
	if st := call(t, c, request("rl", reg)).Statuses[0]; st.LimitRemaining != 4 {
		t.Errorf("regular after two refused requests: %d left, want 4", st.LimitRemaining)
	}
}
