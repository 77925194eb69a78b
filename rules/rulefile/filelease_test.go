package rulefile_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/rules/rulefile"
)

// The lease and hot_keys blocks become each rule's policy.
func TestLeaseBlocks(t *testing.T) {
	set, err := rulefile.LoadFile("../../testdata/rulefiles/valid/lease.yaml", testConfig())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]sluice.LeasePolicy{
		"per-key": {Rule: "per-key", Enabled: true, MaxLease: 25, TTL: 2 * time.Second, HotKeys: sluice.HotKeyPolicy{Threshold: 1000, Split: 4}},
		"per-ip":  {Rule: "per-ip", HotKeys: sluice.HotKeyPolicy{Threshold: 500, Lease: true}},
	}
	for _, r := range set.Rules() {
		if r.Lease != want[r.Name] {
			t.Errorf("rule %s: %+v, want %+v", r.Name, r.Lease, want[r.Name])
		}
	}
	off, err := rulefile.Parse("off.yaml", []byte("rules:\n  - {name: a, key: ip, limit: {rate: 1, per: 1s}, lease: {enabled: false, max_lease: 4}}\n"), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	if p := off.Rules()[0].Lease; p.Enabled || p.MaxLease != 4 {
		t.Fatalf("enabled: false: %+v", p)
	}
}
