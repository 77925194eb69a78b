package conn

import (
	"errors"
	"testing"
)

// The health of an endpoint: down wins over suspect until it is up again;
// the first failure after being up is told apart; those waiting for worse
// news are woken by it, and only by it.
func TestHealth(t *testing.T) {
	refused, reset, closed := errors.New("refused"), errors.New("reset"), errors.New("closed")
	type step struct {
		do    string // "up", "down", "suspect"
		err   error
		told  bool // what SetDown or SetSuspect reports
		fault error
		susp  bool
		woken bool // a waiter from before the step is woken
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"up stays up", []step{{do: "up"}}},
		{"down, then up", []step{
			{do: "down", err: refused, told: true, fault: refused, woken: true},
			{do: "down", err: reset, told: false, fault: reset, woken: true},
			{do: "up"},
		}},
		{"suspect, then down, then up", []step{
			{do: "suspect", err: closed, told: true, fault: closed, susp: true, woken: true},
			{do: "down", err: refused, told: true, fault: refused, woken: true},
			{do: "up"},
		}},
		{"suspect while down changes nothing", []step{
			{do: "down", err: refused, told: true, fault: refused, woken: true},
			{do: "suspect", err: closed, told: false, fault: refused},
		}},
		{"suspect twice", []step{
			{do: "suspect", err: closed, told: true, fault: closed, susp: true, woken: true},
			{do: "suspect", err: reset, told: true, fault: reset, susp: true, woken: true},
			{do: "up"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h Health
			for i, s := range tc.steps {
				worse := h.Worse()
				var told bool
				switch s.do {
				case "up":
					h.SetUp()
				case "down":
					told = h.SetDown(s.err, "ep")
				case "suspect":
					told = h.SetSuspect(s.err)
				}
				if told != s.told {
					t.Errorf("step %d %s: told %v, want %v", i, s.do, told, s.told)
				}
				f := h.Fault()
				switch {
				case s.fault == nil && f != nil:
					t.Errorf("step %d %s: fault %+v, want up", i, s.do, f)
				case s.fault != nil && (f == nil || f.Err != s.fault || f.Suspect != s.susp):
					t.Errorf("step %d %s: fault %+v, want %v (suspect %v)", i, s.do, f, s.fault, s.susp)
				}
				if s.do == "down" && f != nil && f.Name != "ep" {
					t.Errorf("step %d: down for %q, want ep", i, f.Name)
				}
				if down := h.Down(); (down != nil) != (s.fault != nil && !s.susp) {
					t.Errorf("step %d %s: Down %v", i, s.do, down)
				}
				select {
				case <-worse:
					if !s.woken {
						t.Errorf("step %d %s: a waiter was woken", i, s.do)
					}
				default:
					if s.woken {
						t.Errorf("step %d %s: no waiter was woken", i, s.do)
					}
				}
			}
		})
	}
}
