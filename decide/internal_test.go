package decide

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
)

// TestDecideAllocatesNothing: deciding an admitted request on an
// in-process store allocates nothing; the rate-limit fields, when there are
// any, allocate their values' string.
func TestDecideAllocatesNothing(t *testing.T) {
	mem := memstore.New(memstore.Config{})
	defer mem.Close(context.Background())
	set := rules.MustNew(rules.Rule{Name: "a", Key: keyfunc.Global(), Limit: sluice.PerSecond(1_000_000).WithBurst(1 << 30)})
	var m rules.Matched
	if err := set.Resolve(httptest.NewRequest("GET", "/", nil), &m); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		mode headers.Mode
		want float64
	}{{headers.None, 0}, {headers.Default, 1}} {
		dc, err := New(mem, WithHeaders(tt.mode))
		if err != nil {
			t.Fatal(err)
		}
		o := &Outcome{dc: dc, Matched: &m} // an outcome reused, as the pool reuses them
		ctx := context.Background()
		dc.decide(ctx, o, nil)
		if n := testing.AllocsPerRun(100, func() { dc.decide(ctx, o, nil) }); n != tt.want || o.Verdict != Admitted {
			t.Errorf("headers %v: %v allocations per decision (%v), want %v", tt.mode, n, o.Verdict, tt.want)
		}
	}
}

func TestBinding(t *testing.T) {
	allow := func(rem int64, reset time.Duration) sluice.Result {
		return sluice.Result{Allowed: true, Remaining: rem, ResetAfter: reset}
	}
	deny := func(retry time.Duration) sluice.Result { return sluice.Result{RetryAfter: retry} }
	cases := []struct {
		name     string
		results  []sluice.Result
		admitted bool
		want     int
	}{
		{"fewest remaining", []sluice.Result{allow(5, 0), allow(2, 0), allow(9, 0)}, true, 1},
		{"tie broken by longest reset", []sluice.Result{allow(2, time.Second), allow(2, time.Minute)}, true, 1},
		{"longest retry among deniers", []sluice.Result{deny(time.Second), allow(0, 0), deny(time.Minute)}, false, 2},
		{"unsatisfiable binds first", []sluice.Result{deny(time.Hour), {Unsatisfiable: true}}, false, 1},
		{"only an unexposed rule denied", []sluice.Result{allow(3, 0), allow(1, 0)}, false, 1},
		{"nothing exposed", nil, true, -1},
		{"nothing exposed, refused", nil, false, -1},
	}
	for _, tc := range cases {
		var ps []headers.Policy
		for _, r := range tc.results {
			ps = append(ps, headers.Policy{Name: "p", Result: r})
		}
		if got := binding(ps, tc.admitted); got != tc.want {
			t.Errorf("%s: binding = %d, want %d", tc.name, got, tc.want)
		}
	}
}
