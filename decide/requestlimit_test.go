package decide_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
)

// requestLimitCounter counts the request-set limits reported to it.
type requestLimitCounter struct {
	mu     sync.Mutex
	counts map[string]int // "rule action"
}

func (*requestLimitCounter) Observe(context.Context, sluice.Decision) {}

func (c *requestLimitCounter) ObserveRequestLimit(_ context.Context, e sluice.RequestLimitEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[e.Rule+" "+e.Action.String()]++
}

// A limit a request sets above the cap is capped, one for a rule the set
// does not have is ignored: each is reported to the observer, and logged
// at most once a second.
func TestRequestLimitsReported(t *testing.T) {
	mem := memstore.New(memstore.Config{})
	t.Cleanup(func() { mem.Close(context.Background()) })
	obs := &requestLimitCounter{counts: map[string]int{}}
	var logs bytes.Buffer
	dc, err := decide.New(mem, decide.WithObserver(obs), decide.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	set := rules.MustNew(rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(10)})
	ctx := sluice.WithLimit(sluice.WithLimit(context.Background(), "per-ip", sluice.PerMinute(50)), "per-tennant", sluice.PerMinute(5))
	for range 3 {
		o := dc.Check(set, httptest.NewRequest("GET", "/", nil).WithContext(ctx), nil)
		if o.Verdict != decide.Admitted || o.Results[0].Limit != sluice.PerMinute(10) {
			t.Fatalf("verdict %v, result %+v: want admitted under the cap, 10/1m", o.Verdict, o.Results[0])
		}
		o.Finish(ctx, 0)
	}
	if want := map[string]int{"per-ip capped": 3, "per-tennant unknown_rule": 3}; len(obs.counts) != 2 || obs.counts["per-ip capped"] != 3 || obs.counts["per-tennant unknown_rule"] != 3 {
		t.Errorf("observed %v, want %v", obs.counts, want)
	}
	if n := strings.Count(logs.String(), "\n"); n != 1 || !strings.Contains(logs.String(), "rule=per-tennant") {
		t.Errorf("%d log records, want 1 (at most one a second):\n%s", n, logs.String())
	}
}
