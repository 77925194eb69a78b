package middleware_test

import (
	"context"
	"github.com/sluicehq/sluice/decide"
	"io"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/lease"
)

// takeCounter counts the calls that reach a store.
type takeCounter struct {
	sluice.Refunder
	calls atomic.Int64
}

func (c *takeCounter) Take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	c.calls.Add(1)
	return c.Refunder.Take(ctx, hits, out)
}

// Under leases, one instance's responses are those of the store alone:
// the same statuses, rate-limit headers, Retry-After and 429 body, while
// the shared store sees a call per lease, not per request.
func TestLeasedResponsesKeepTheirShape(t *testing.T) {
	rule := perIP(sluice.PerSecond(10).WithBurst(8))
	rule.Lease = sluice.LeasePolicy{Enabled: true}
	responses := func(store sluice.Store) []string {
		srv := serve(t, middleware.Limit(store, rules.MustNew(rule), decide.WithLogger(quietLogger())), &okHandler{})
		var out []string
		for range 10 {
			resp := get(t, srv.Client(), srv.URL)
			body, _ := io.ReadAll(resp.Body)
			out = append(out, resp.Status+" | "+resp.Header.Get("RateLimit")+" | "+resp.Header.Get("RateLimit-Policy")+
				" | "+resp.Header.Get("Retry-After")+" | "+resp.Header.Get("Content-Type")+" | "+string(body))
		}
		return out
	}
	plain, _ := newMemstore(t)
	shared, clock := newMemstore(t)
	counted := &takeCounter{Refunder: shared}
	leased, err := lease.New(counted, lease.Config{Clock: clock, SweepInterval: -1, Instances: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { leased.Close(context.Background()) })
	want, got := responses(plain), responses(leased)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d:\n leased %s\n  alone %s", i, got[i], want[i])
		}
	}
	if want[8][:3] != "429" {
		t.Fatalf("the 9th request: %s, want a 429 to compare", want[8])
	}
	if n := counted.calls.Load(); n >= 8 {
		t.Fatalf("the shared store saw %d calls for 10 requests: not leased", n)
	}
}
