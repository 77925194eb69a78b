package rules_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
)

func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func tenantRule() rules.Rule {
	return rules.Rule{
		Name: "per-tenant", Key: keyfunc.Header("X-Tenant"), Limit: sluice.PerMinute(600),
		Overrides: []rules.Override{{Identities: []string{"acme", " globex "}, Limit: sluice.PerMinute(6000)}},
	}
}

// resolveTenant resolves one request of tenant (none when "") on set,
// with ctx's values, and returns the matched hits.
func resolveTenant(t *testing.T, set *rules.Set, ctx context.Context, tenant string) *rules.Matched {
	t.Helper()
	r := httptest.NewRequest("GET", "/", nil).WithContext(ctx)
	if tenant != "" {
		r.Header.Set("X-Tenant", tenant)
	}
	var m rules.Matched
	if err := set.Resolve(r, &m); err != nil {
		t.Fatal(err)
	}
	return &m
}

func TestOverrides(t *testing.T) {
	set := rules.MustNew(tenantRule())
	for _, tc := range []struct {
		tenant string
		want   sluice.Limit
	}{
		{"acme", sluice.PerMinute(6000)},
		{"globex", sluice.PerMinute(6000)}, // spaces around an identity are the operator's
		{"initech", sluice.PerMinute(600)},
		{"ACME", sluice.PerMinute(600)}, // header values are compared as they are
	} {
		m := resolveTenant(t, set, context.Background(), tc.tenant)
		if len(m.Hits) != 1 || m.Hits[0].Limit != tc.want {
			t.Errorf("%s: hits %+v, want limit %v", tc.tenant, m.Hits, tc.want)
		}
		if len(m.LimitEvents) != 0 {
			t.Errorf("%s: events %+v", tc.tenant, m.LimitEvents)
		}
	}
	// The bucket key does not depend on the limit: an override changed by
	// a reload keeps the identity's bucket.
	plain := rules.MustNew(rules.Rule{Name: "per-tenant", Key: keyfunc.Header("X-Tenant"), Limit: sluice.PerMinute(600)})
	if a, b := resolveTenant(t, set, context.Background(), "acme"), resolveTenant(t, plain, context.Background(), "acme"); a.Hits[0].Key != b.Hits[0].Key {
		t.Errorf("an override changed the bucket key: %q, %q", a.Hits[0].Key, b.Hits[0].Key)
	}
	rule := set.Rules()[0]
	if l := rule.LimitFor("acme"); l != sluice.PerMinute(6000) {
		t.Errorf("LimitFor(acme) = %v", l)
	}
	if l := rule.LimitFor("initech"); l != sluice.PerMinute(600) {
		t.Errorf("LimitFor(initech) = %v", l)
	}
}

func TestOverridesByAPIKeyHash(t *testing.T) {
	set := rules.MustNew(rules.Rule{
		Name: "per-key", Key: keyfunc.APIKey("X-API-Key"), Limit: sluice.PerMinute(10), Algorithm: sluice.FixedWindow,
		Overrides: []rules.Override{{Identities: []string{keyHash("sk_live_partner")}, Limit: sluice.PerMinute(1000)}},
	})
	for key, want := range map[string]sluice.Limit{"sk_live_partner": sluice.PerMinute(1000), "sk_live_other": sluice.PerMinute(10)} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-API-Key", key)
		var m rules.Matched
		if err := set.Resolve(r, &m); err != nil {
			t.Fatal(err)
		}
		if m.Hits[0].Limit != want || m.Hits[0].Algorithm != sluice.FixedWindow {
			t.Errorf("%s: %+v, want %v by the rule's algorithm", key, m.Hits[0], want)
		}
	}
}

func TestOverridesValidate(t *testing.T) {
	with := func(f func(*rules.Rule)) rules.Rule { r := tenantRule(); f(&r); return r }
	cases := []struct {
		name string
		rule rules.Rule
		want string
	}{
		{"global key", with(func(r *rules.Rule) { r.Key = keyfunc.Global() }), `"per-tenant": overrides: a rule keyed by global`},
		{"malformed ip", with(func(r *rules.Rule) {
			r.Key = keyfunc.ClientIP()
			r.Overrides[0].Identities = []string{"192.0.2.1", "acme"}
		}), `overrides[0].identities[1]: a rule keyed by ip: want an IPv4 or IPv6 address`},
		{"api key in clear", with(func(r *rules.Rule) {
			r.Key = keyfunc.APIKey("X-API-Key")
			r.Overrides[0].Identities = []string{"sk_live_secret"}
		}), `overrides[0].identities[0]: a rule keyed by api_key lists keys as "sha256:"`},
		{"duplicate", with(func(r *rules.Rule) {
			r.Overrides = append(r.Overrides, rules.Override{Identities: []string{"acme"}, Limit: sluice.PerMinute(1)})
		}), `overrides[1].identities[0]: the identity is listed twice`},
		{"no identities", with(func(r *rules.Rule) { r.Overrides[0].Identities = nil }), `overrides[0].identities: empty`},
		{"invalid limit", with(func(r *rules.Rule) { r.Overrides[0].Limit = sluice.PerMinute(0) }), `overrides[0].limit: sluice: invalid limit`},
		{"burst on a window", with(func(r *rules.Rule) {
			r.Algorithm = sluice.SlidingWindow
			r.Overrides[0].Limit = sluice.PerMinute(10).WithBurst(20)
		}), `overrides[0].limit:`},
		{"below the cost", with(func(r *rules.Rule) { r.Cost = 5; r.Overrides[0].Limit = sluice.PerMinute(2) }), `overrides[0].limit: capacity 2 is below the cost 5`},
		{"per 1d on a calendar rule", with(func(r *rules.Rule) {
			r.Limit, r.Algorithm = sluice.PerCalendar(600, sluice.Day, nil), sluice.FixedWindow
			r.Overrides[0].Limit = sluice.Per(6000, 24*time.Hour)
		}), `overrides[0].limit: 6000/24h: an override of a calendar limit, or a calendar override, counts in the rule's periods (600/day)`},
		{"another zone on a calendar rule", with(func(r *rules.Rule) {
			r.Limit, r.Algorithm = sluice.PerCalendar(600, sluice.Day, nil), sluice.FixedWindow
			r.Overrides[0].Limit = sluice.PerCalendar(6000, sluice.Day, tokyo(t))
		}), `overrides[0].limit: 6000/day Asia/Tokyo: an override of a calendar limit`},
		{"a calendar override of a window rule", with(func(r *rules.Rule) {
			r.Algorithm = sluice.FixedWindow
			r.Overrides[0].Limit = sluice.PerCalendar(6000, sluice.Day, nil)
		}), `overrides[0].limit: 6000/day: an override of a calendar limit, or a calendar override, counts in the rule's periods (600/1m)`},
		{"max_limit below the limit", with(func(r *rules.Rule) { r.MaxLimit = sluice.PerMinute(100) }), `max_limit: 100/1m is below the rule's limit 600/1m`},
		{"max_limit with another period", with(func(r *rules.Rule) { r.MaxLimit = sluice.PerHour(100000) }), `max_limit: per 1h0m0s: a request's limit keeps the rule's period`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rules.New(tc.rule)
			if !errors.Is(err, rules.ErrInvalidRule) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalidRule containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "sk_live_secret") {
				t.Fatalf("the error repeats an API key: %v", err)
			}
		})
	}
}

func TestRequestLimits(t *testing.T) {
	capped := tenantRule()
	capped.MaxLimit = sluice.PerMinute(3000)
	other := rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerSecond(10)}
	set := rules.MustNew(capped, other)
	lim := func(tenant string, ctx context.Context) (sluice.Limit, []sluice.RequestLimitEvent) {
		m := resolveTenant(t, set, ctx, tenant)
		return m.Hits[0].Limit, m.LimitEvents
	}
	bg := context.Background()
	cases := []struct {
		name   string
		tenant string
		ctx    context.Context
		want   sluice.Limit
		action sluice.RequestLimitAction
		events int
	}{
		{"within the cap", "initech", sluice.WithLimit(bg, "per-tenant", sluice.PerMinute(2000)), sluice.PerMinute(2000), 0, 0},
		{"period left out", "initech", sluice.WithLimit(bg, "per-tenant", sluice.Limit{Rate: 2000}), sluice.PerMinute(2000), 0, 0},
		{"above the cap", "initech", sluice.WithLimit(bg, "per-tenant", sluice.PerMinute(9000)), sluice.PerMinute(3000), sluice.RequestLimitCapped, 1},
		{"burst above the cap", "initech", sluice.WithLimit(bg, "per-tenant", sluice.PerMinute(1000).WithBurst(5000)), sluice.PerMinute(1000).WithBurst(3000), sluice.RequestLimitCapped, 1},
		{"before an override", "acme", sluice.WithLimit(bg, "per-tenant", sluice.PerMinute(100)), sluice.PerMinute(100), 0, 0},
		{"an override capped by max_limit", "acme", sluice.WithLimit(bg, "per-tenant", sluice.PerMinute(6000)), sluice.PerMinute(3000), sluice.RequestLimitCapped, 1},
		{"another period", "initech", sluice.WithLimit(bg, "per-tenant", sluice.PerSecond(10)), sluice.PerMinute(600), sluice.RequestLimitInvalid, 1},
		{"another period, overridden", "acme", sluice.WithLimit(bg, "per-tenant", sluice.PerSecond(10)), sluice.PerMinute(6000), sluice.RequestLimitInvalid, 1},
		{"unknown rule", "initech", sluice.WithLimit(bg, "per-tennant", sluice.PerMinute(100)), sluice.PerMinute(600), sluice.RequestLimitUnknownRule, 1},
		{"the latest wins", "initech", sluice.WithLimit(sluice.WithLimit(bg, "per-tenant", sluice.PerMinute(9000)), "per-tenant", sluice.PerMinute(50)), sluice.PerMinute(50), 0, 0},
		{"another rule's", "initech", sluice.WithLimit(bg, "per-ip", sluice.PerSecond(5)), sluice.PerMinute(600), 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, events := lim(tc.tenant, tc.ctx)
			if got != tc.want {
				t.Errorf("limit %v, want %v", got, tc.want)
			}
			if len(events) != tc.events || tc.events > 0 && events[0].Action != tc.action {
				t.Fatalf("events %+v, want %d %v", events, tc.events, tc.action)
			}
		})
	}
	// A limit for another limiter's rule (chained middleware) is not
	// unknown: a set of the process has the rule.
	perIP := rules.MustNew(other)
	if m := resolveTenant(t, perIP, sluice.WithLimit(bg, "per-tenant", sluice.PerMinute(100)), ""); len(m.LimitEvents) != 0 {
		t.Errorf("another limiter's rule reported: %+v", m.LimitEvents)
	}
	// Without max_limit a request may lower the rule's limit, not raise it.
	set = rules.MustNew(other)
	m := resolveTenant(t, set, sluice.WithLimit(bg, "per-ip", sluice.PerSecond(50)), "")
	if m.Hits[0].Limit != sluice.PerSecond(10) || len(m.LimitEvents) != 1 || m.LimitEvents[0].Applied != sluice.PerSecond(10) {
		t.Errorf("raised without max_limit: %+v, events %+v", m.Hits[0].Limit, m.LimitEvents)
	}
	m = resolveTenant(t, set, sluice.WithLimit(bg, "per-ip", sluice.PerSecond(3)), "")
	if m.Hits[0].Limit != sluice.PerSecond(3) || len(m.LimitEvents) != 0 {
		t.Errorf("lowered without max_limit: %+v, events %+v", m.Hits[0].Limit, m.LimitEvents)
	}
}

// Bypass entries are decided by their own limit, whatever a request sets.
func TestRequestLimitsLeaveBypassAlone(t *testing.T) {
	set, err := rules.MustNew(tenantRule()).WithBypass(rules.Bypass{
		Name: "office", Limit: sluice.PerSecond(100),
		Identify: func(*http.Request) (string, bool) { return "office", true },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := sluice.WithLimit(sluice.WithLimit(context.Background(), "office", sluice.PerSecond(1)), "per-tenant", sluice.PerMinute(1))
	m := resolveTenant(t, set, ctx, "acme")
	if m.Bypass != "office" || m.Hits[0].Limit != sluice.PerSecond(100) {
		t.Errorf("bypass: %+v", m)
	}
}

// Overrides are looked up in memory: many identities resolve without
// allocating beyond what a rule without overrides allocates.
func TestOverridesManyIdentities(t *testing.T) {
	ids := make([]string, 20_000)
	for i := range ids {
		ids[i] = fmt.Sprintf("tenant-%d", i)
	}
	r := tenantRule()
	r.Overrides = []rules.Override{{Identities: ids, Limit: sluice.Per(10, time.Second)}}
	set := rules.MustNew(r)
	if m := resolveTenant(t, set, context.Background(), "tenant-19999"); m.Hits[0].Limit != sluice.Per(10, time.Second) {
		t.Errorf("tenant-19999: %v", m.Hits[0].Limit)
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("X-Tenant", "tenant-7")
	var m rules.Matched
	with := testing.AllocsPerRun(100, func() { _ = set.Resolve(req, &m) })
	plain := rules.MustNew(rules.Rule{Name: "per-tenant", Key: keyfunc.Header("X-Tenant"), Limit: sluice.PerMinute(600)})
	without := testing.AllocsPerRun(100, func() { _ = plain.Resolve(req, &m) })
	if with > without {
		t.Errorf("Resolve allocates %v with overrides, %v without", with, without)
	}
	// A request that sets a limit allocates nothing more either.
	limited := req.WithContext(sluice.WithLimit(req.Context(), "per-tenant", sluice.PerMinute(100)))
	if n := testing.AllocsPerRun(100, func() { _ = set.Resolve(limited, &m) }); n > without {
		t.Errorf("Resolve allocates %v with a request's limit, %v without", n, without)
	}
}

func BenchmarkResolveOverride(b *testing.B) {
	for _, kind := range []string{"header", "api_key"} {
		b.Run(kind, func(b *testing.B) {
			r := tenantRule()
			req := httptest.NewRequest("GET", "/", nil)
			if kind == "api_key" {
				r.Key = keyfunc.APIKey("X-Tenant")
				r.Overrides[0].Identities = []string{keyHash("acme-0123456789abcdef0123456789abcdef")}
				req.Header.Set("X-Tenant", "acme-0123456789abcdef0123456789abcdef")
			} else {
				req.Header.Set("X-Tenant", "acme")
			}
			set := rules.MustNew(r)
			var m rules.Matched
			b.ReportAllocs()
			for b.Loop() {
				_ = set.Resolve(req, &m)
			}
			if m.Hits[0].Limit != sluice.PerMinute(6000) {
				b.Fatalf("limit %v", m.Hits[0].Limit)
			}
		})
	}
}

// tokyo loads Asia/Tokyo, failing t without the zone database.
func tokyo(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatalf("zone Asia/Tokyo: %v", err)
	}
	return loc
}
