package sluiceotel_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/redistest/redisstoretest"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	sluiceotel "github.com/sluicehq/sluice/otel"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/lease"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/redisstore"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// The traffic of the wrapper tests: requests from one client on a rule of
// 100 an hour whose buckets are leased; the last two are refused, the
// second of them, on Redis, from the memory of refusals.
const (
	wrapperRequests = 102
	wrapperAllowed  = 100
)

// decisionInstruments are the instruments a middleware's observer
// records, by name: their points.
type decisionInstruments struct {
	decisions, remembered []string
	calls                 int // sluice.store.call.duration's count
}

// TestRecorderThroughLeasesOnRedis: a recorder set as the Redis store's
// Config.Events, the single hook, records the same decisions and
// remembered refusals with and without a lease store in front (store
// calls: fewer, served from leases), counts each decision once when the
// middleware is given it too, and shows the breaker from the start.
func TestRecorderThroughLeasesOnRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	testRecorderThroughLeases(t, false, func(t *testing.T, rec *sluiceotel.Recorder) sluice.Store {
		s, _ := redisstoretest.Open(t, srv.Addr, redisstore.Config{Events: rec, Secret: []byte(t.Name()), RememberRefusals: time.Minute})
		return s
	})
}

// TestRecorderThroughLeasesOnMemstore: the same over the in-process
// store, where the recorder goes to the middleware and to memstore's
// Events.
func TestRecorderThroughLeasesOnMemstore(t *testing.T) {
	testRecorderThroughLeases(t, true, func(t *testing.T, rec *sluiceotel.Recorder) sluice.Store {
		s := memstore.New(memstore.Config{Events: rec, SweepInterval: -1})
		t.Cleanup(func() { s.Close(context.Background()) })
		return s
	})
}

func testRecorderThroughLeases(t *testing.T, inProcess bool, open func(*testing.T, *sluiceotel.Recorder) sluice.Store) {
	cases := []struct {
		name         string
		lease        bool
		onMiddleware bool // the recorder is given to the middleware too
	}{
		{"store", false, inProcess},
		{"lease", true, inProcess},
		{"store/recorder-on-middleware-too", false, true},
		{"lease/recorder-on-middleware-too", true, true},
	}
	var base decisionInstruments
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec, reader := newRecorder(t)
			store := open(t, rec)
			if p := collect(t, reader)["sluice.breaker.state"].points; !inProcess && !closedFromStart(p) {
				t.Errorf("breaker state before any request %q, want closed 1, half_open 0, open 0", p)
			}
			if tc.lease {
				ls, err := lease.New(store, lease.Config{RememberRefusals: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ls.Close(context.Background()) })
				store = ls
			}
			opts := []middleware.Option{decide.WithBudget(5 * time.Second)}
			if tc.onMiddleware {
				opts = append(opts, decide.WithObserver(rec))
			}
			set := rules.MustNew(rules.Rule{Name: "leased", Key: keyfunc.ClientIP(), Limit: sluice.PerHour(100),
				Lease: sluice.LeasePolicy{Enabled: true}})
			codes := get(middleware.Limit(store, set, opts...)(ok), wrapperRequests)
			want := slices.Repeat([]int{http.StatusOK}, wrapperAllowed)
			want = append(want, http.StatusTooManyRequests, http.StatusTooManyRequests)
			if !slices.Equal(codes, want) {
				t.Fatalf("statuses %v", codes)
			}
			got := recorded(t, reader)
			if i == 0 {
				base = got
				wantDecisions := []string{"sluice.outcome=allowed,sluice.rule=leased: 100", "sluice.outcome=denied,sluice.rule=leased: 2"}
				wantRemembered, wantCalls := []string{"sluice.rule=leased: 1"}, wrapperRequests-1
				if inProcess { // nothing is remembered in process
					wantRemembered, wantCalls = nil, wrapperRequests
				}
				if !slices.Equal(got.decisions, wantDecisions) || !slices.Equal(got.remembered, wantRemembered) || got.calls != wantCalls {
					t.Fatalf("decisions %q, remembered %q, %d store calls; want %q, %q, %d",
						got.decisions, got.remembered, got.calls, wantDecisions, wantRemembered, wantCalls)
				}
				return
			}
			if !slices.Equal(got.decisions, base.decisions) || !slices.Equal(got.remembered, base.remembered) {
				t.Errorf("decisions %q, remembered %q; want %q, %q as without leases", got.decisions, got.remembered, base.decisions, base.remembered)
			}
			switch {
			case !tc.lease || inProcess: // over an in-process store every Take is a store call
				if got.calls != base.calls {
					t.Errorf("%d store calls, want %d", got.calls, base.calls)
				}
			case got.calls == 0 || got.calls >= base.calls:
				t.Errorf("%d store calls, want from 1 to %d: served from leases", got.calls, base.calls-1)
			}
		})
	}
}

// recorded returns the instruments of rule "leased" reader collected.
func recorded(t *testing.T, reader *sdkmetric.ManualReader) decisionInstruments {
	t.Helper()
	got := collect(t, reader)
	d := decisionInstruments{decisions: got["sluice.decisions"].points, remembered: got["sluice.refusals.remembered"].points}
	for _, p := range got["sluice.store.call.duration"].points {
		_, count, _ := strings.Cut(p, "count=")
		count, _, _ = strings.Cut(count, " ")
		n, err := strconv.Atoi(count)
		if err != nil {
			t.Fatalf("store call point %q: %v", p, err)
		}
		d.calls += n
	}
	return d
}

// closedFromStart reports whether points, sluice.breaker.state's, are one
// endpoint's closed breaker: 1 for closed, 0 for half_open and open.
func closedFromStart(points []string) bool {
	want := []string{"sluice.breaker.state=closed,", "sluice.breaker.state=half_open,", "sluice.breaker.state=open,"}
	if len(points) != len(want) {
		return false
	}
	for i, p := range points {
		value := ": 0"
		if i == 0 {
			value = ": 1"
		}
		if !strings.HasPrefix(p, want[i]) || !strings.HasSuffix(p, value) {
			return false
		}
	}
	return true
}
