package envoy_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/envoy"
)

// TestMappingLongUnknownField: an unknown field with a long name, such as
// a secret pasted as a field, is described by its length only, as in rule
// files; a short one is named, with the closest known field.
func TestMappingLongUnknownField(t *testing.T) {
	secret := "sk_live_4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
	for _, tc := range []struct{ doc, want string }{
		{"domain: d\ndescriptors:\n  - key: a\n    " + secret + ": 1\n",
			`envoy: test.yaml:4: domain "d": descriptors[0]: unknown field (a 40-byte name, not shown)`},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limt: {unit: second, requests_per_unit: 1}\n",
			`envoy: test.yaml:4: domain "d": descriptors[0]: unknown field "rate_limt" (did you mean "rate_limit"?)`},
	} {
		_, err := envoy.ParseMapping("test.yaml", []byte(tc.doc))
		if err == nil || err.Error() != tc.want {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

// TestMappingRefusesConcurrency: a mapping that asks for a concurrency
// limit, on a descriptor or its rate limit, is refused, saying why: the
// service never sees a request end.
func TestMappingRefusesConcurrency(t *testing.T) {
	const why = ": the Envoy service never sees a request end, so it cannot free a concurrency slot: limit requests in flight in the service itself (sluice's middleware or gRPC interceptors)"
	for _, tc := range []struct{ doc, want string }{
		{"domain: d\ndescriptors:\n  - key: a\n    concurrency: {max: 5, hold: 60s}\n",
			`envoy: test.yaml:4: domain "d": descriptors[0].concurrency` + why},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      concurrency: {max: 5, hold: 60s}\n",
			`envoy: test.yaml:5: domain "d": descriptors[0].rate_limit.concurrency` + why},
	} {
		_, err := envoy.ParseMapping("test.yaml", []byte(tc.doc))
		if err == nil || err.Error() != tc.want {
			t.Errorf("error %v,\nwant %q", err, tc.want)
		}
	}
}

// TestMappingValueBudget: the values a file's aliases stand for count
// against one budget for the whole file, not one per document.
func TestMappingValueBudget(t *testing.T) {
	doc := func(domain string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "domain: %s\ndescriptors:\n", domain)
		for i := range 600 {
			fmt.Fprintf(&b, "  - key: p%d\n    descriptors: ", i)
			if i == 0 {
				b.WriteString("&d [")
				for j := range 100 {
					fmt.Fprintf(&b, "{key: k%d}, ", j)
				}
				b.WriteString("]\n")
			} else {
				b.WriteString("*d\n")
			}
		}
		return b.String()
	}
	if _, err := envoy.ParseMapping("one.yaml", []byte(doc("a"))); err != nil {
		t.Fatalf("one document: %v", err)
	}
	_, err := envoy.ParseMapping("two.yaml", []byte(doc("a")+"---\n"+doc("b")))
	want := `domain "b": descriptors[`
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "the document is too large (more than 200000 values, aliases expanded)") {
		t.Fatalf("two documents: %v, want the budget's error in domain b", err)
	}
}

// FuzzParseMappingMerged: with MergeDomains, and through the fields that
// carry envoyproxy/ratelimit's meanings (requests_per_unit 0, quota_mode,
// metadata), no input makes the parser panic, and every refusal is a
// *MappingError naming the file, with a line within the input.
func FuzzParseMappingMerged(f *testing.F) {
	for _, seed := range []string{
		"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 0}\n---\ndomain: d\ndescriptors:\n  - key: b\n",
		"domain: d\ndescriptors:\n  - key: s\n    quota_mode: true\n    metadata: {x: {y: [1, 2.5, true, ~, z]}}\n    rate_limit: {unit: minute, requests_per_unit: 1}\n",
		"domain: d\nunmatched: ok\n---\ndomain: d\nunmatched: over_limit\n",
		"domain: d\ndescriptors: [{key: a}]\n---\ndomain: d\ndescriptors: [{key: a}]\n",
		"domain: d\ndescriptors:\n  - key: a\n    metadata: &m {a: *m}\n",
		"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1, replaces: [{name: b}]}\n---\ndomain: d\ndescriptors:\n  - key: c\n    rate_limit: {unit: second, requests_per_unit: 1, name: b}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := envoy.ParseMapping("fuzz.yaml", data, envoy.MergeDomains())
		if err != nil {
			me, ok := errors.AsType[*envoy.MappingError](err)
			if !ok || me.File != "fuzz.yaml" || me.Line < 0 || me.Line > strings.Count(string(data), "\n")+strings.Count(string(data), "\r")+2 {
				t.Fatalf("bad error %v", err)
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
