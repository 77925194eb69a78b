package envoy_test

import (
	"context"
	"github.com/sluicehq/sluice/decide"
	"strings"
	"sync"
	"testing"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/envoy"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// partialStore fails its calls' first hit, as a Redis Cluster with one
// slot's shard down does, and decides the others: allowed, 4 left, each
// taking its cost, unless refused is set.
type partialStore struct {
	refused bool
	mu      sync.Mutex
	refunds []sluice.Refund
}

func (s *partialStore) Take(context.Context, []sluice.Hit, []sluice.Result) error {
	return &sluice.StoreError{Op: "test: take", Kind: sluice.ErrUnavailable}
}

func (s *partialStore) TakePartial(_ context.Context, hits []sluice.Hit, out []sluice.Result) error {
	for i := 1; i < len(hits); i++ {
		out[i] = sluice.Result{Allowed: !s.refused, Limit: hits[i].Limit, Remaining: 4}
		if !s.refused {
			out[i].Receipt = sluice.Receipt{Taken: hits[i].Units(), Mark: 1}
		}
	}
	return &sluice.PartialError{Failed: []int{0}, Err: &sluice.StoreError{Op: "test: take", Kind: sluice.ErrUnavailable}}
}

func (s *partialStore) Refund(_ context.Context, refunds []sluice.Refund) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refunds = append(s.refunds, refunds...)
	return nil
}

// TestPartialStoreFailure: when the store fails some descriptors only
// (one Redis Cluster slot down), only their limits apply on_fail; the
// others keep the store's statuses and appear in the headers, and a
// request refused either way gives back what the others took.
func TestPartialStoreFailure(t *testing.T) {
	const doc = `
domain: p
descriptors:
  - key: first
    rate_limit: {unit: minute, requests_per_unit: 1, on_fail: %s}
  - key: second
    rate_limit: {unit: minute, requests_per_unit: 5}
`
	tests := []struct {
		name     string
		onFail   string
		refused  bool
		code     codes.Code
		statuses []rlsv3.RateLimitResponse_Code // the overall code, then each descriptor's
		refunds  int
		policy   bool // RateLimit-Policy names the decided limit
	}{
		{name: "the failed limit passes open", onFail: "open", code: codes.OK, statuses: codes3(ok, ok, ok), policy: true},
		{name: "the decided limit refuses", onFail: "open", refused: true, code: codes.OK, statuses: codes3(over, ok, over), policy: true},
		{name: "the failed limit fails closed", onFail: "closed", code: codes.Unavailable, refunds: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &partialStore{refused: tt.refused}
			svc, err := envoy.New(store, mustMapping(t, strings.Replace(doc, "%s", tt.onFail, 1)), decide.WithLogger(quiet))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := svc.ShouldRateLimit(context.Background(), request("p", desc("first", "x"), desc("second", "y")))
			if status.Code(err) != tt.code {
				t.Fatalf("got %v, want %v", err, tt.code)
			}
			if len(store.refunds) != tt.refunds {
				t.Errorf("%d refunds, want %d", len(store.refunds), tt.refunds)
			}
			if err != nil {
				return
			}
			if !sameCodes(codesOf(resp), tt.statuses...) {
				t.Errorf("got %v, want %v", codesOf(resp), tt.statuses)
			}
			if got := resp.Statuses[1].LimitRemaining; got != 4 {
				t.Errorf("the decided descriptor's limit_remaining %d, want the store's 4", got)
			}
			if got := header(resp, "ratelimit-policy"); strings.Contains(got, "p.second") != tt.policy || strings.Contains(got, "p.first") {
				t.Errorf("RateLimit-Policy %q: want the decided limit only", got)
			}
		})
	}
}

func codes3(a, b, c rlsv3.RateLimitResponse_Code) []rlsv3.RateLimitResponse_Code {
	return []rlsv3.RateLimitResponse_Code{a, b, c}
}
