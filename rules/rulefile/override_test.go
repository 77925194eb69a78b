package rulefile_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/rulefile"
)

// A reloaded override changes the identity's limit at once, in the same
// bucket: the count so far is kept and compared with the new limit.
func TestReloadOverrideKeepsBucket(t *testing.T) {
	const fw = "rules:\n  - name: per-ip\n    key: ip\n    algorithm: fixed_window\n    limit: {rate: 5, per: 1m}\n%s"
	const over = "    overrides:\n      - identities: [%s]\n        limit: {rate: 8, per: 1m}\n"
	p := newBucketProbe(t, fmt.Sprintf(fw, fmt.Sprintf(over, "198.51.100.9")))
	for range 5 {
		if r := p.take(); !r.Allowed {
			t.Fatalf("refused under 5: %+v", r)
		}
	}
	if r := p.take(); r.Allowed {
		t.Fatalf("6th allowed under the rule's 5 (the override names another client): %+v", r)
	}
	p.reload(fmt.Sprintf(fw, fmt.Sprintf(over, "192.0.2.1")))
	if r := p.take(); !r.Allowed || r.Remaining != 2 || r.Limit.Rate != 8 {
		t.Fatalf("after the override of 8: %+v, want the 6th allowed with 2 left", r)
	}
	p.reload(fmt.Sprintf(fw, ""))
	if r := p.take(); r.Allowed {
		t.Fatalf("after the override is removed: %+v, want refused under 5", r)
	}
}

// A file holds 10,000 override identities, API keys by their SHA-256 (the
// longest form), within its size limit, and each is looked up.
func TestTenThousandOverrides(t *testing.T) {
	const n = 10_000
	var b strings.Builder
	b.WriteString("rules:\n  - name: per-key\n    key: api_key\n    limit: {rate: 10, per: 1m}\n    overrides:\n      - limit: {rate: 1000, per: 1m}\n        identities:\n")
	for i := range n {
		fmt.Fprintf(&b, "          - %s\n", rulefile.HashAPIKey(fmt.Sprintf("key-%d", i)))
	}
	if b.Len() > rulefile.MaxFileSize {
		t.Fatalf("%d bytes: over MaxFileSize", b.Len())
	}
	set, err := rulefile.Parse("many.yaml", []byte(b.String()), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	if got := len(set.Rules()[0].Overrides[0].Identities); got != n {
		t.Fatalf("%d identities, want %d", got, n)
	}
	for key, want := range map[string]int64{"key-0": 1000, "key-9999": 1000, "key-10000": 10} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-API-Key", key)
		var m rules.Matched
		if err := set.Resolve(r, &m); err != nil {
			t.Fatal(err)
		}
		if m.Hits[0].Limit != sluice.PerMinute(want) {
			t.Errorf("%s: %v, want %d/1m", key, m.Hits[0].Limit, want)
		}
	}
	t.Logf("%d identities in %d bytes (limit %d)", n, b.Len(), rulefile.MaxFileSize)
}
