package rules_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
)

func TestWithBypass(t *testing.T) {
	base := rules.MustNew(rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(1)})
	always := func(*http.Request) (string, bool) { return "x", true }
	ok := rules.Bypass{Name: "ops", Identify: always, Limit: sluice.PerSecond(5)}
	with, err := base.WithBypass(ok)
	if err != nil {
		t.Fatal(err)
	}
	var m rules.Matched
	if err := base.Resolve(httptest.NewRequest("GET", "/", nil), &m); err != nil || m.Bypass != "" {
		t.Fatalf("WithBypass changed the original set: %q %v", m.Bypass, err)
	}
	if err := with.Resolve(httptest.NewRequest("GET", "/", nil), &m); err != nil || m.Bypass != "ops" {
		t.Fatalf("bypass %q, %v", m.Bypass, err)
	}
	if got := with.BypassEntries(); len(got) != 1 || got[0].Name != "ops" || got[0].Limit != ok.Limit || len(base.BypassEntries()) != 0 {
		t.Fatalf("BypassEntries: %+v, and %d on the original set", got, len(base.BypassEntries()))
	}
	for name, b := range map[string]rules.Bypass{
		"no name":        {Identify: always, Limit: sluice.PerSecond(5)},
		"rule's name":    {Name: "per-ip", Identify: always, Limit: sluice.PerSecond(5)},
		"no identify":    {Name: "x", Limit: sluice.PerSecond(5)},
		"bad limit":      {Name: "x", Identify: always},
		"window burst":   {Name: "x", Identify: always, Limit: sluice.PerSecond(5).WithBurst(9), Algorithm: sluice.FixedWindow},
		"bad algorithm":  {Name: "x", Identify: always, Limit: sluice.PerSecond(5), Algorithm: 42},
		"bad on_fail":    {Name: "x", Identify: always, Limit: sluice.PerSecond(5), OnFail: 9},
		"control char":   {Name: "a\tb", Identify: always, Limit: sluice.PerSecond(5)},
		"used by bypass": ok,
	} {
		if _, err := with.WithBypass(b); !errors.Is(err, rules.ErrInvalidRule) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}
