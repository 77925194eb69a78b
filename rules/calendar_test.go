package rules_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zone below, whatever the machine has

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
)

// A calendar rule: its algorithm is the fixed window; a request's own
// limit of only a rate takes its calendar and zone, one per a duration or
// another zone is ignored, and max_limit must share its calendar and zone.
func TestCalendarRules(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	month := func(n int64) sluice.Limit { return sluice.PerCalendar(n, sluice.Month, berlin) }
	rule := rules.Rule{Name: "monthly", Key: keyfunc.Header("X-Tenant"), Limit: month(10000), Algorithm: sluice.FixedWindow, MaxLimit: month(50000)}
	bad := rule
	bad.Algorithm = sluice.SlidingWindow
	if err := bad.Validate(); !errors.Is(err, rules.ErrInvalidRule) || !strings.Contains(err.Error(), "calendar limit counts as a fixed window") {
		t.Errorf("a sliding window calendar rule: %v", err)
	}
	bad = rule
	bad.MaxLimit = sluice.PerCalendar(50000, sluice.Month, nil)
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "write max_limit per month Europe/Berlin") {
		t.Errorf("max_limit in another zone: %v", err)
	}
	set := rules.MustNew(rule)
	bg := context.Background()
	for _, tc := range []struct {
		name   string
		set    sluice.Limit
		want   sluice.Limit
		events int
		action sluice.RequestLimitAction
	}{
		{"only a rate", sluice.Limit{Rate: 20000}, month(20000), 0, 0},
		{"the rule's calendar", month(30000), month(30000), 0, 0},
		{"above the cap", sluice.Limit{Rate: 90000}, month(50000), 1, sluice.RequestLimitCapped},
		{"per a duration", sluice.Per(20000, 30*24*time.Hour), month(10000), 1, sluice.RequestLimitInvalid},
		{"another zone", sluice.PerCalendar(20000, sluice.Month, nil), month(10000), 1, sluice.RequestLimitInvalid},
	} {
		m := resolveTenant(t, set, sluice.WithLimit(bg, "monthly", tc.set), "initech")
		got := m.Hits[0].Limit
		if !got.SamePeriod(tc.want) || got.Rate != tc.want.Rate || m.Hits[0].Algorithm != sluice.FixedWindow {
			t.Errorf("%s: %v %v, want %v", tc.name, got, m.Hits[0].Algorithm, tc.want)
		}
		if len(m.LimitEvents) != tc.events || tc.events > 0 && m.LimitEvents[0].Action != tc.action {
			t.Errorf("%s: events %+v, want %d %v", tc.name, m.LimitEvents, tc.events, tc.action)
		}
	}
}

// A calendar rule whose algorithm is left zero is a fixed window, as in a
// rule file and on a sluice.Limiter: Validate and New take it, the set's
// rules and their hits say FixedWindow, and so do a bypass entry's; any
// other algorithm set is refused.
func TestCalendarRuleDefaultsToFixedWindow(t *testing.T) {
	day := sluice.PerCalendar(1000, sluice.Day, nil)
	for _, tc := range []struct {
		name string
		alg  sluice.Algorithm
		want string // "" for valid
	}{
		{"left zero", 0, ""},
		{"fixed window", sluice.FixedWindow, ""},
		{"sliding window", sluice.SlidingWindow, "limit: sluice: invalid limit"},
		{"sliding log", sluice.SlidingLog, "limit: sluice: invalid limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rule := rules.Rule{Name: "daily", Key: keyfunc.Header("X-Tenant"), Limit: day, Algorithm: tc.alg,
				Overrides: []rules.Override{{Identities: []string{"acme"}, Limit: sluice.PerCalendar(5000, sluice.Day, nil)}}}
			verr := rule.Validate()
			set, err := rules.New(rule)
			if tc.want != "" {
				for _, err := range []error{verr, err} {
					if !errors.Is(err, rules.ErrInvalidRule) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "calendar limit counts as a fixed window") {
						t.Fatalf("got %v, want an error saying %q", err, tc.want)
					}
				}
				return
			}
			if verr != nil || err != nil {
				t.Fatalf("Validate: %v; New: %v", verr, err)
			}
			if got := set.Rules()[0].Algorithm; got != sluice.FixedWindow {
				t.Errorf("the set's rule: %v, want fixed_window", got)
			}
			for _, tenant := range []string{"initech", "acme"} {
				m := resolveTenant(t, set, context.Background(), tenant)
				if len(m.Hits) != 1 || m.Hits[0].Algorithm != sluice.FixedWindow || !m.Hits[0].Limit.IsCalendar() {
					t.Errorf("%s's hits: %+v, want one calendar hit of fixed_window", tenant, m.Hits)
				}
			}
			bypassed, err := set.WithBypass(rules.Bypass{Name: "office", Identify: func(*http.Request) (string, bool) { return "office", true }, Limit: day, Algorithm: tc.alg})
			if err != nil {
				t.Fatal(err)
			}
			if m := resolveTenant(t, bypassed, context.Background(), "acme"); m.Bypass != "office" || m.Hits[0].Algorithm != sluice.FixedWindow {
				t.Errorf("a bypass entry's hits: %+v, want fixed_window", m.Hits)
			}
		})
	}
}
