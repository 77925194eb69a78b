package decide_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// noRefunds hides a store's Refund.
type noRefunds struct{ sluice.Store }

// TestFinishGivesBackUncounted: Finish gives back what a counting rule
// took when the request's end is not one it counts, and only then: an
// unknown end (a front end that never sees it), a store that cannot give
// back, a refused request, all count.
func TestFinishGivesBackUncounted(t *testing.T) {
	logins := rules.Rule{Name: "failed-logins", Key: keyfunc.Global(), Limit: sluice.PerMinute(3),
		Count: &rules.Count{Status: []int{401}, GRPC: []rules.GRPCCode{16}}}
	plain := rules.Rule{Name: "all", Key: keyfunc.Global(), Limit: sluice.PerMinute(100)}
	tests := []struct {
		name       string
		status     []rules.Status
		charge     int64
		noRefunds  bool
		remaining  int64 // failed-logins's, after one request
		plainLeft  int64 // all's
		decideOnly bool  // through Decide, as the Envoy service does
	}{
		{name: "200 given back", status: []rules.Status{rules.HTTPStatus(200)}, remaining: 3, plainLeft: 99},
		{name: "401 counts", status: []rules.Status{rules.HTTPStatus(401)}, remaining: 2, plainLeft: 99},
		{name: "grpc OK given back", status: []rules.Status{rules.GRPCStatus(0)}, remaining: 3, plainLeft: 99},
		{name: "grpc Unauthenticated counts", status: []rules.Status{rules.GRPCStatus(16)}, remaining: 2, plainLeft: 99},
		{name: "unknown end counts", remaining: 2, plainLeft: 99},
		{name: "unknown end through Decide counts", remaining: 2, plainLeft: 99, decideOnly: true},
		{name: "store without refunds counts", status: []rules.Status{rules.HTTPStatus(200)}, noRefunds: true, remaining: 2, plainLeft: 99},
		{name: "charge skips the uncounted rule", status: []rules.Status{rules.HTTPStatus(200)}, charge: 2, remaining: 3, plainLeft: 97},
		{name: "charge on the counted rule", status: []rules.Status{rules.HTTPStatus(401)}, charge: 1, remaining: 1, plainLeft: 98},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var store sluice.Store = memstore.New(memstore.Config{Clock: storetest.NewClock(time.Unix(1_700_000_000, 0))})
			if tc.noRefunds {
				store = noRefunds{store}
			}
			dc, err := decide.New(store, quiet)
			if err != nil {
				t.Fatal(err)
			}
			set := rules.MustNew(logins, plain)
			req := httptest.NewRequest("POST", "/login", nil)
			var o *decide.Outcome
			if tc.decideOnly {
				var m rules.Matched
				if err := set.Resolve(req, &m); err != nil {
					t.Fatal(err)
				}
				o = dc.Decide(ctx, &m)
			} else {
				o = dc.Check(set, req, nil)
			}
			if o.Verdict != decide.Admitted || !o.Counting() {
				t.Fatalf("verdict %v, counting %v", o.Verdict, o.Counting())
			}
			o.Finish(ctx, tc.charge, tc.status...)
			peek := dc.Check(set, req.WithContext(sluice.WithCost(ctx, 0)), nil)
			if got := peek.Results[0].Remaining; got != tc.remaining {
				t.Errorf("failed-logins remaining %d, want %d", got, tc.remaining)
			}
			if got := peek.Results[1].Remaining; got != tc.plainLeft {
				t.Errorf("all remaining %d, want %d", got, tc.plainLeft)
			}
			peek.Finish(ctx, 0)
		})
	}
}

// TestRefusedIsNotCounting: a refused request took nothing: nothing to
// give back, whatever its end.
func TestRefusedIsNotCounting(t *testing.T) {
	ctx := context.Background()
	store := memstore.New(memstore.Config{Clock: storetest.NewClock(time.Unix(1_700_000_000, 0))})
	dc, err := decide.New(store, quiet)
	if err != nil {
		t.Fatal(err)
	}
	set := rules.MustNew(rules.Rule{Name: "failed-logins", Key: keyfunc.Global(), Limit: sluice.PerMinute(1),
		Count: &rules.Count{Status: []int{401}}})
	req := httptest.NewRequest("POST", "/login", nil)
	dc.Check(set, req, nil).Finish(ctx, 0, rules.HTTPStatus(401))
	o := dc.Check(set, req, nil)
	if o.Verdict != decide.Refused || o.Counting() {
		t.Fatalf("verdict %v, counting %v", o.Verdict, o.Counting())
	}
	o.Finish(ctx, 0, rules.HTTPStatus(200)) // must give nothing back
	if o := dc.Check(set, req, nil); o.Verdict != decide.Refused {
		t.Fatalf("verdict %v after a refused request's end: it gave back what it never took", o.Verdict)
	}
}

// TestUnknownEndWarnsOnce: a front end that finishes counted requests
// without their status (the Envoy service, a front end not yet passing
// it) is told once in the log: its counting rules count every request.
func TestUnknownEndWarnsOnce(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	store := memstore.New(memstore.Config{Clock: storetest.NewClock(time.Unix(1_700_000_000, 0))})
	dc, err := decide.New(store, decide.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	if err != nil {
		t.Fatal(err)
	}
	set := rules.MustNew(rules.Rule{Name: "failed-logins", Key: keyfunc.Global(), Limit: sluice.PerMinute(10),
		Count: &rules.Count{Status: []int{401}}})
	req := httptest.NewRequest("POST", "/login", nil)
	dc.Check(set, req, nil).Finish(ctx, 0, rules.HTTPStatus(200))
	if buf.Len() != 0 {
		t.Fatalf("a finish with its status logged: %s", buf.String())
	}
	for range 3 {
		var m rules.Matched
		if err := set.Resolve(req, &m); err != nil {
			t.Fatal(err)
		}
		dc.Decide(ctx, &m).Finish(ctx, 0)
	}
	if n := strings.Count(buf.String(), "finished without its status"); n != 1 {
		t.Fatalf("%d warnings, want 1: %s", n, buf.String())
	}
}
