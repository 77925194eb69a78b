package envoy_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/envoy"
)

// mustMapping parses a mapping document or fails the test.
func mustMapping(tb testing.TB, doc string) *envoy.Mapping {
	tb.Helper()
	m, err := envoy.ParseMapping("test.yaml", []byte(doc))
	if err != nil {
		tb.Fatalf("ParseMapping: %v", err)
	}
	return m
}

// TestParseMappingRules: a reference-format file becomes one rule per
// counted limit, named by its name or its path, with the unit's length as
// its period and the document's defaults.
func TestParseMappingRules(t *testing.T) {
	m := mustMapping(t, `
domain: api
defaults: {algorithm: fixed_window, on_fail: closed}
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 60}
  - key: generic_key
    value: login
    descriptors:
      - key: remote_address
        rate_limit: {unit: hour, requests_per_unit: 5, name: login-per-ip, algorithm: token_bucket, burst: 2, on_fail: open}
  - key: user_agent
    value: batch
    rate_limit: {unlimited: true}
  - key: plan
    value: trial
    shadow_mode: true
    detailed_metric: true
    value_to_metric: true
    rate_limit: {unit: WEEK, requests_per_unit: 7}
---
domain: other
descriptors:
  - key: k
    rate_limit: {unit: year, requests_per_unit: 1}
`)
	if got := strings.Join(m.Domains(), ","); got != "api,other" {
		t.Fatalf("Domains() = %s", got)
	}
	type want struct {
		limit  sluice.Limit
		alg    sluice.Algorithm
		onFail string
		shadow bool
	}
	wants := map[string]want{
		"api.remote_address": {sluice.PerMinute(60), sluice.FixedWindow, "closed", false},
		"login-per-ip":       {sluice.PerHour(5).WithBurst(2), sluice.TokenBucket, "open", false},
		"api.plan_trial":     {sluice.Per(7, 7*24*60*60*1e9), sluice.FixedWindow, "closed", true},
	}
	got := m.Rules("api").Rules()
	if len(got) != len(wants) {
		t.Fatalf("%d rules, want %d: %+v", len(got), len(wants), got)
	}
	for _, r := range got {
		w, ok := wants[r.Name]
		if !ok {
			t.Errorf("unexpected rule %q", r.Name)
			continue
		}
		if r.Limit != w.limit || r.Algorithm != w.alg || r.OnFail.String() != w.onFail || r.Shadow != w.shadow {
			t.Errorf("rule %q: %v %v %v shadow=%v, want %v %v %v shadow=%v", r.Name, r.Limit, r.Algorithm, r.OnFail, r.Shadow, w.limit, w.alg, w.onFail, w.shadow)
		}
	}
	if r := m.Rules("other").Rules(); len(r) != 1 || r[0].Limit.Period != 365*24*60*60*1e9 {
		t.Errorf("domain other: %+v", r)
	}
	if m.Rules("nope") != nil {
		t.Error("Rules of an undefined domain is not nil")
	}
}

// TestParseMappingDocExample: the package documentation's example parses.
func TestParseMappingDocExample(t *testing.T) {
	data, err := os.ReadFile("testdata/doc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m, err := envoy.ParseMapping("doc.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if n := m.Rules("api").Len(); n != 5 {
		t.Errorf("%d rules, want 5", n)
	}
}

// TestParseMappingErrors: every mistake is refused with the file, the line
// and the field, wrapping ErrInvalidMapping and sluice.ErrInvalidConfig.
func TestParseMappingErrors(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"empty file", ``, `envoy: test.yaml: empty file: no domain`},
		{"invalid YAML", "domain: [", `envoy: test.yaml:1: invalid YAML`},
		{"not a mapping", "- a\n- b\n", `envoy: test.yaml:1: must be a mapping (name: value), not a list`},
		{"no domain", "descriptors: []\n", `envoy: test.yaml:1: domain: missing`},
		{"empty domain", "domain: ''\n", `envoy: test.yaml:1: domain: empty`},
		{"unknown top field", "domain: d\ndescriptor: []\n", `envoy: test.yaml:2: domain "d": unknown field "descriptor"`},
		{"bad unmatched", "domain: d\nunmatched: deny\n", `envoy: test.yaml:2: domain "d": unmatched: "deny": want ok or over_limit`},
		{"bad default algorithm", "domain: d\ndefaults: {algorithm: leaky}\n", `test.yaml:2: domain "d": defaults.algorithm: "leaky"`},
		{"bad default on_fail", "domain: d\ndefaults: {on_fail: maybe}\n", `test.yaml:2: domain "d": defaults.on_fail: "maybe": want local, open or closed`},
		{"descriptors not a list", "domain: d\ndescriptors: {key: a}\n", `test.yaml:2: domain "d": descriptors: must be a list of descriptors, not a mapping`},
		{"no key", "domain: d\ndescriptors:\n  - value: v\n", `test.yaml:3: domain "d": descriptors[0].key: missing`},
		{"empty key", "domain: d\ndescriptors:\n  - key: ''\n", `test.yaml:3: domain "d": descriptors[0].key: empty`},
		{"unknown descriptor field", "domain: d\ndescriptors:\n  - key: a\n    rate: {}\n", `test.yaml:4: domain "d": descriptors[0]: unknown field "rate"`},
		{"duplicate descriptor", "domain: d\ndescriptors:\n  - key: a\n    value: b\n  - key: a\n    value: b\n", `test.yaml:5: domain "d": descriptors[1]: a second descriptor with key "a" and value "b" at this level (first at line 3)`},
		{"field twice", "domain: d\ndescriptors:\n  - key: a\n    key: b\n", `test.yaml:4: domain "d": descriptors[0].key: set twice (first at line 3)`},
		{"bad unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: minutes\n      requests_per_unit: 1\n", `test.yaml:5: domain "d": descriptors[0].rate_limit.unit: "minutes" is not a unit (second, minute, hour, day, week, month, year)`},
		{"no unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {requests_per_unit: 1}\n", `test.yaml:4: domain "d": descriptors[0].rate_limit.unit: missing`},
		{"no requests", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second}\n", `test.yaml:4: domain "d": descriptors[0].rate_limit.requests_per_unit: missing`},
		{"zero requests with a burst", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      requests_per_unit: 0\n      burst: 5\n", `test.yaml:7: domain "d": descriptors[0].rate_limit.burst: not with requests_per_unit: 0`},
		{"string requests", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      requests_per_unit: '10'\n", `test.yaml:6: domain "d": descriptors[0].rate_limit.requests_per_unit: must be a whole number, not a string`},
		{"requests out of range", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      requests_per_unit: 5000000000\n", `descriptors[0].rate_limit.requests_per_unit: "5000000000" is out of range`},
		{"too fast", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      requests_per_unit: 2000000\n", `test.yaml:6: domain "d": descriptors[0].rate_limit.requests_per_unit: 2000000 per second with token_bucket: rate 2000000 per 1s: at most one event per microsecond`},
		{"window too large", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: year\n      requests_per_unit: 1000\n      algorithm: sliding_window\n", `descriptors[0].rate_limit.requests_per_unit: 1000 per year with sliding_window`},
		{"unlimited with unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unlimited: true\n      unit: second\n", `test.yaml:6: domain "d": descriptors[0].rate_limit.unit: not with unlimited: true`},
		{"burst on a window", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 5, burst: 9, algorithm: fixed_window}\n", `descriptors[0].rate_limit.burst: only a token_bucket has a burst`},
		{"bad shadow", "domain: d\ndescriptors:\n  - key: a\n    shadow_mode: yes please\n", `test.yaml:4: domain "d": descriptors[0].shadow_mode: must be true or false, not a string`},
		{"bad quota mode", "domain: d\ndescriptors:\n  - key: a\n    quota_mode: 1\n", `test.yaml:4: domain "d": descriptors[0].quota_mode: must be true or false, not a number`},
		{"metadata not a mapping", "domain: d\ndescriptors:\n  - key: a\n    metadata: [x]\n", `test.yaml:4: domain "d": descriptors[0].metadata: must be a mapping (name: value), not a list`},
		{"metadata field twice", "domain: d\ndescriptors:\n  - key: a\n    metadata:\n      x: 1\n      x: 2\n", `test.yaml:6: domain "d": descriptors[0].metadata.x: set twice`},
		{"share without wildcard", "domain: d\ndescriptors:\n  - key: a\n    value: b\n    share_threshold: true\n", `test.yaml:5: domain "d": descriptors[0].share_threshold: needs a value with a wildcard`},
		{"duplicate name", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1, name: x}\n  - key: b\n    rate_limit: {unit: second, requests_per_unit: 1, name: x}\n", `test.yaml:6: domain "d": descriptors[1].rate_limit.name: "x" names two rate limits of the domain (first at line 4)`},
		{"unprintable name", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1, name: \"caf\u00e9\"}\n", `descriptors[0].rate_limit.name: "café": must be printable ASCII`},
		{"replaces unknown", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      replaces: [{name: nope}]\n", `test.yaml:7: domain "d": descriptors[0].rate_limit.replaces[0].name: "nope" names no rate limit of the domain`},
		{"replaces itself", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      name: me\n      replaces: [{name: me}]\n", `descriptors[0].rate_limit.replaces[0].name: "me" is this rate limit's own name`},
		{"merge key", "domain: d\nbase: &b {key: a}\n", `unknown field "base"`},
		{"domain twice", "domain: d\n---\ndomain: d\n", `test.yaml:3: domain "d": domain: defined twice (first at test.yaml:1)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := envoy.ParseMapping("test.yaml", []byte(tt.doc))
			if err == nil {
				t.Fatalf("accepted, want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error\n  %v\nwant it to contain\n  %s", err, tt.want)
			}
			var me *envoy.MappingError
			if !errors.As(err, &me) || !errors.Is(err, envoy.ErrInvalidMapping) || !errors.Is(err, sluice.ErrInvalidConfig) {
				t.Errorf("%v: not a *MappingError wrapping ErrInvalidMapping and sluice.ErrInvalidConfig", err)
			}
		})
	}
}

// TestLoadMapping: several files combine; a mistake names the file that
// has it; a domain in two files is refused naming both.
func TestLoadMapping(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string { return tempFile(t, dir, name, doc) }
	a := write("a.yaml", "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n")
	b := write("b.yaml", "domain: b\n")
	bad := write("bad.yaml", "domain: c\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n")
	again := write("again.yaml", "\n\ndomain: a\n")
	m, err := envoy.LoadMapping([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.Domains(), ","); got != "a,b" {
		t.Errorf("Domains() = %s", got)
	}
	for _, tt := range []struct {
		paths []string
		want  string
	}{
		{[]string{a, bad}, bad + `:4: domain "c": descriptors[0].rate_limit.unit: "fortnight" is not a unit`},
		{[]string{a, again}, again + `:3: domain "a": domain: defined twice (first at ` + a + `:1)`},
		{[]string{filepath.Join(dir, "missing.yaml")}, "missing.yaml: open: no such file or directory"},
		{nil, "no mapping file given"},
	} {
		_, err := envoy.LoadMapping(tt.paths)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("LoadMapping(%v) = %v, want %q", tt.paths, err, tt.want)
		}
	}
}

// FuzzParseMapping: no input makes the parser panic, and every refusal is
// a *MappingError naming the file, with a line within the input.
func FuzzParseMapping(f *testing.F) {
	for _, seed := range []string{
		"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1}\n",
		"domain: d\ndescriptors:\n  - key: a\n    value: 'x*y'\n    share_threshold: true\n    descriptors:\n      - key: b\n        rate_limit: {unlimited: true}\n",
		"domain: d\nunmatched: over_limit\ndefaults: {algorithm: sliding_log}\n---\ndomain: e\n",
		"a: &a [*a]\n",
		"domain: d\ndescriptors: &x\n  - key: a\n    descriptors: *x\n",
		"{",
	} {
		f.Add([]byte(seed))
	}
	if data, err := os.ReadFile("testdata/doc.yaml"); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := envoy.ParseMapping("fuzz.yaml", data)
		if err != nil {
			var me *envoy.MappingError
			if !errors.As(err, &me) {
				t.Fatalf("not a *MappingError: %v", err)
			}
			if me.File != "fuzz.yaml" || me.Line < 0 || me.Line > strings.Count(string(data), "\n")+strings.Count(string(data), "\r")+2 {
				t.Fatalf("bad location in %v", err)
			}
			return
		}
		for _, d := range m.Domains() {
			if d == "" {
				t.Fatal("an empty domain was accepted")
			}
			_ = m.Rules(d)
		}
	})
}
