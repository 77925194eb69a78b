package decide_test

import (
	"context"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// networked is a store behind a network: it counts its calls, and serves
// local tokens only when local says so.
type networked struct {
	mem   *memstore.Store
	calls atomic.Int64
	local bool
}

func (s *networked) Take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	s.calls.Add(1)
	return s.mem.Take(ctx, hits, out)
}

// withLocal is a networked store with local tokens (sluice.LocalStore).
type withLocal struct{ *networked }

func (s withLocal) TakeLocal(hits []sluice.Hit, out []sluice.Result) bool {
	if !s.local {
		return false
	}
	return s.mem.Take(context.Background(), hits, out) == nil
}

// undecided stands for a nil outcome in TestCheckInProcess's table.
const undecided decide.Verdict = 255

// TestCheckInProcess: CheckInProcess decides on an in-process store and
// from a store's local tokens, and otherwise returns nil with no store
// call and nothing reported.
func TestCheckInProcess(t *testing.T) {
	clk := storetest.NewClock(time.Unix(1_700_000_000, 0))
	set := rules.MustNew(rules.Rule{Name: "r", Key: keyfunc.Global(), Limit: sluice.PerMinute(1)})
	required := rules.MustNew(rules.Rule{Name: "k", Key: keyfunc.Header("X-Key").Required(), Limit: sluice.PerMinute(1)})
	tests := []struct {
		name    string
		store   func(*memstore.Store) (sluice.Store, *networked)
		set     *rules.Set
		can     bool
		decided []decide.Verdict // per check; undecided: CheckInProcess returns nil
	}{
		{"memstore", func(m *memstore.Store) (sluice.Store, *networked) { return m, nil }, set, true,
			[]decide.Verdict{decide.Admitted, decide.Refused}},
		{"no local tokens", func(m *memstore.Store) (sluice.Store, *networked) { n := &networked{mem: m}; return n, n }, set, false,
			[]decide.Verdict{undecided, undecided}},
		{"local tokens dry", func(m *memstore.Store) (sluice.Store, *networked) { n := &networked{mem: m}; return withLocal{n}, n }, set, true,
			[]decide.Verdict{undecided, undecided}},
		{"local tokens", func(m *memstore.Store) (sluice.Store, *networked) {
			n := &networked{mem: m, local: true}
			return withLocal{n}, n
		}, set, true, []decide.Verdict{decide.Admitted, decide.Refused}},
		{"cannot key", func(m *memstore.Store) (sluice.Store, *networked) { return m, nil }, required, true,
			[]decide.Verdict{undecided}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, net := tt.store(memstore.New(memstore.Config{Clock: clk}))
			var seen atomic.Int64
			dc, err := decide.New(store, decide.WithObserver(sluice.ObserverFunc(func(context.Context, sluice.Decision) { seen.Add(1) })))
			if err != nil {
				t.Fatal(err)
			}
			if got := dc.CanDecideInProcess(); got != tt.can {
				t.Errorf("CanDecideInProcess = %v, want %v", got, tt.can)
			}
			var observed int64
			for i, want := range tt.decided {
				o := dc.CheckInProcess(tt.set, httptest.NewRequest("GET", "/", nil))
				if want == undecided {
					if o != nil {
						t.Fatalf("check %d: decided %v, want nil", i, o.Verdict)
					}
					continue
				}
				observed++
				if o == nil || o.Verdict != want {
					t.Fatalf("check %d: %v, want %v", i, o, want)
				}
				o.Finish(context.Background(), 0)
			}
			if net != nil && net.calls.Load() != 0 {
				t.Errorf("%d store calls, want none", net.calls.Load())
			}
			if got := seen.Load(); got != observed {
				t.Errorf("%d decisions observed, want %d", got, observed)
			}
		})
	}
}
