package rules_test

import (
	"context"
	"errors"
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
	bad.Algorithm = sluice.TokenBucket
	if err := bad.Validate(); !errors.Is(err, rules.ErrInvalidRule) || !strings.Contains(err.Error(), "calendar limit counts as a fixed window") {
		t.Errorf("a token bucket calendar rule: %v", err)
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
