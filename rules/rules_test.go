package rules_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
)

func constKey(s string) keyfunc.Key {
	return keyfunc.New("const", func(*http.Request) (string, error) { return s, nil })
}

func TestNewValidates(t *testing.T) {
	ok := rules.Rule{Name: "ok", Key: constKey("x"), Limit: sluice.PerMinute(10)}
	with := func(f func(*rules.Rule)) rules.Rule { r := ok; f(&r); return r }
	cases := []struct {
		name  string
		rules []rules.Rule
		want  string
	}{
		{"no rules", nil, "no rules"},
		{"no name", []rules.Rule{with(func(r *rules.Rule) { r.Name = "" })}, "has no name"},
		{"control character in name", []rules.Rule{with(func(r *rules.Rule) { r.Name = "a\nb" })}, `"a\nb": name`},
		{"no key", []rules.Rule{with(func(r *rules.Rule) { r.Key = keyfunc.Key{} })}, `"ok": key`},
		{"zero rate", []rules.Rule{with(func(r *rules.Rule) { r.Limit = sluice.PerMinute(0) })}, `"ok": limit: sluice: invalid limit: rate 0`},
		{"period under 1ms", []rules.Rule{with(func(r *rules.Rule) { r.Limit = sluice.Per(1, time.Microsecond) })}, `"ok": limit`},
		{"negative burst", []rules.Rule{with(func(r *rules.Rule) { r.Limit.Burst = -1 })}, `"ok": limit`},
		{"burst below cost", []rules.Rule{with(func(r *rules.Rule) { r.Limit = sluice.PerMinute(10).WithBurst(2); r.Cost = 3 })}, `"ok": cost: 3 exceeds the capacity 2`},
		{"negative cost", []rules.Rule{with(func(r *rules.Rule) { r.Cost = -1 })}, `"ok": cost`},
		{"unknown algorithm", []rules.Rule{with(func(r *rules.Rule) { r.Algorithm = 99 })}, `"ok": algorithm`},
		{"unknown on_fail", []rules.Rule{with(func(r *rules.Rule) { r.OnFail = 9 })}, `"ok": on_fail`},
		{"duplicate names", []rules.Rule{ok, ok}, `"ok": name: used by two rules`},
		{"negative lease", []rules.Rule{with(func(r *rules.Rule) { r.Lease.MaxLease = -1 })}, `"ok": lease.max_lease`},
		{"lease ttl over a minute", []rules.Rule{with(func(r *rules.Rule) { r.Lease.TTL = time.Hour })}, `"ok": lease.ttl`},
		{"split of one", []rules.Rule{with(func(r *rules.Rule) { r.Lease.HotKeys = sluice.HotKeyPolicy{Threshold: 10, Split: 1} })}, `"ok": hot_keys.split`},
		{"split above the rate", []rules.Rule{with(func(r *rules.Rule) {
			r.Limit = sluice.PerSecond(10)
			r.Lease.HotKeys = sluice.HotKeyPolicy{Threshold: 10, Split: 64}
		})}, `"ok": hot_keys.split: 64`},
		{"hot keys without threshold", []rules.Rule{with(func(r *rules.Rule) { r.Lease.HotKeys.Lease = true })}, `"ok": hot_keys.threshold`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rules.New(tc.rules...)
			if !errors.Is(err, rules.ErrInvalidRule) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalidRule containing %q", err, tc.want)
			}
		})
	}
	if _, err := rules.New(ok); err != nil {
		t.Fatalf("valid rule refused: %v", err)
	}
}

func TestResolve(t *testing.T) {
	set := rules.MustNew(
		rules.Rule{Name: "a", Key: keyfunc.New("ip", constKey("id").Func()), Limit: sluice.PerMinute(10)},
		rules.Rule{Name: "posts-only", Key: constKey("id"), Limit: sluice.PerMinute(5), Cost: 2, Shadow: true,
			Match: func(r *http.Request) bool { return r.Method == http.MethodPost }},
	)
	var m rules.Matched
	if err := set.Resolve(httptest.NewRequest(http.MethodGet, "/", nil), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Hits) != 1 || m.Hits[0].Key != rules.BucketKey("a", "ip", "id") || m.Hits[0].Cost != 1 || m.Rules[0].Name != "a" {
		t.Fatalf("GET: %+v", m)
	}
	if err := set.Resolve(httptest.NewRequest(http.MethodPost, "/", nil), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Hits) != 2 || m.Hits[1].Cost != 2 || !m.Hits[1].Shadow || m.Hits[1].Key != rules.BucketKey("posts-only", "const", "id") {
		t.Fatalf("POST: %+v", m)
	}

	failing := rules.MustNew(rules.Rule{Name: "ip", Key: keyfunc.New("ip", func(*http.Request) (string, error) {
		return "", keyfunc.ErrNoKey
	}), Limit: sluice.PerMinute(1)})
	err := failing.Resolve(httptest.NewRequest(http.MethodGet, "/", nil), &m)
	if !errors.Is(err, keyfunc.ErrNoKey) || !strings.Contains(err.Error(), `rule "ip"`) {
		t.Fatalf("err = %v, want ErrNoKey naming the rule", err)
	}
}

func TestBucketKeyIsUnambiguous(t *testing.T) {
	triples := [][3]string{
		{"a", "b", "c"}, {"a", "bc", ""}, {"ab", "c", ""}, {"a", "", "bc"}, {"", "ab", "c"},
		{"1:a", "b", "c"}, {"1", "a", "1:bc"}, {"a:", "b", "c"},
	}
	seen := map[string][3]string{}
	for _, tr := range triples {
		k := rules.BucketKey(tr[0], tr[1], tr[2])
		if prev, dup := seen[k]; dup {
			t.Fatalf("BucketKey%q == BucketKey%q == %q", tr, prev, k)
		}
		seen[k] = tr
	}
}

func FuzzBucketKey(f *testing.F) {
	f.Add("per-ip", "ip", "1.2.3.4", "per-ip", "ip", "1.2.3.5")
	f.Add("a", "b:", "c", "a", "b", ":c")
	f.Fuzz(func(t *testing.T, r1, k1, i1, r2, k2, i2 string) {
		same := r1 == r2 && k1 == k2 && i1 == i2
		if (rules.BucketKey(r1, k1, i1) == rules.BucketKey(r2, k2, i2)) != same {
			t.Fatalf("BucketKey(%q,%q,%q) vs (%q,%q,%q): equal keys iff equal triples violated", r1, k1, i1, r2, k2, i2)
		}
	})
}

func TestOnFailNames(t *testing.T) {
	for _, f := range []rules.OnFail{rules.FailOpen, rules.FailClosed, rules.FailLocal} {
		got, err := rules.ParseOnFail(f.String())
		if err != nil || got != f {
			t.Fatalf("ParseOnFail(%q) = %v, %v", f.String(), got, err)
		}
	}
	if _, err := rules.ParseOnFail("sideways"); err == nil {
		t.Fatal("unknown on_fail accepted")
	}
}

// A rule's lease policy reaches its hits, named after the rule; a rule
// without one sends none.
func TestResolveLeasePolicy(t *testing.T) {
	set := rules.MustNew(
		rules.Rule{Name: "leased", Key: constKey("id"), Limit: sluice.PerSecond(100), Lease: sluice.LeasePolicy{Enabled: true, MaxLease: 10}},
		rules.Rule{Name: "hot", Key: constKey("id"), Limit: sluice.PerSecond(100), Lease: sluice.LeasePolicy{HotKeys: sluice.HotKeyPolicy{Threshold: 50, Split: 4}}},
		rules.Rule{Name: "plain", Key: constKey("id"), Limit: sluice.PerSecond(100)},
	)
	var m rules.Matched
	if err := set.Resolve(httptest.NewRequest(http.MethodGet, "/", nil), &m); err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		rule    string
		enabled bool
		split   int
	}{{"leased", true, 0}, {"hot", false, 4}} {
		p := m.Hits[i].Lease
		if p == nil || p.Rule != want.rule || p.Enabled != want.enabled || p.HotKeys.Split != want.split {
			t.Fatalf("hit %d: policy %+v, want rule %q enabled=%v split=%d", i, p, want.rule, want.enabled, want.split)
		}
	}
	if m.Hits[2].Lease != nil {
		t.Fatalf("a rule without a policy sent %+v", m.Hits[2].Lease)
	}
}
