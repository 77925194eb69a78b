package rulefile_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/rulefile"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

const bypassFile = `
rules:
  - {name: per-ip, key: ip, limit: {rate: 100, per: 1m}}
bypass:
  - name: partner
    api_keys: ["%s"]
    limit: {rate: 3, per: 1s}
  - name: operators
    users: [alice]
    limit: {rate: 10, per: 1s}
  - name: office
    cidrs: [203.0.113.0/24, "::ffff:198.51.100.0/120", "2001:db8:1::/48"]
    limit: {rate: 20, per: 1s}
  - name: retired
    cidrs: [0.0.0.0/0]
    limit: {rate: 1, per: 1s}
    enabled: false
`

func bypassSet(t *testing.T) *rules.Set {
	t.Helper()
	return mustParse(t, strings.Replace(bypassFile, "%s", rulefile.HashAPIKey("partner-key"), 1), testConfig())
}

func TestBypassIdentifies(t *testing.T) {
	set := bypassSet(t)
	keyHash := sha256.Sum256([]byte("partner-key"))
	cases := []struct {
		name      string
		remote    string
		hdr       []string
		user      string
		wantEntry string
		wantIdent string // the identity in the bucket key
		wantRules string
	}{
		{"nobody", "192.0.2.1:1", nil, "", "", "", "per-ip"},
		{"api_key", "192.0.2.1:1", []string{"X-API-Key", "partner-key"}, "", "partner", "api_key:" + hex.EncodeToString(keyHash[:]), "partner"},
		{"api_key_with_spaces", "192.0.2.1:1", []string{"X-API-Key", " partner-key "}, "", "partner", "api_key:" + hex.EncodeToString(keyHash[:]), "partner"},
		{"wrong_api_key", "192.0.2.1:1", []string{"X-API-Key", "partner-kez"}, "", "", "", "per-ip"},
		{"api_key_twice", "192.0.2.1:1", []string{"X-API-Key", "partner-key", "X-API-Key", "partner-key"}, "", "", "", "per-ip"},
		{"user", "192.0.2.1:1", nil, "alice", "operators", "user:alice", "operators"},
		{"other_user", "192.0.2.1:1", nil, "mallory", "", "", "per-ip"},
		{"cidr", "203.0.113.9:1", nil, "", "office", "ip:203.0.113.9", "office"},
		{"cidr_v4_mapped_prefix", "198.51.100.20:1", nil, "", "office", "ip:198.51.100.20", "office"},
		{"cidr_v4_mapped_client", "[::ffff:203.0.113.9]:1", nil, "", "office", "ip:203.0.113.9", "office"},
		{"cidr_v6_grouped_by_64", "[2001:db8:1:2::77]:1", nil, "", "office", "ip:2001:db8:1:2::", "office"},
		{"first_entry_wins", "203.0.113.9:1", []string{"X-API-Key", "partner-key"}, "alice", "partner", "api_key:" + hex.EncodeToString(keyHash[:]), "partner"},
		{"disabled_entry", "192.0.2.77:1", nil, "", "", "", "per-ip"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := req{target: "/", hdr: tc.hdr, user: tc.user}.build()
			r.RemoteAddr = tc.remote
			var m rules.Matched
			if err := set.Resolve(sluiceCost(r, 50), &m); err != nil {
				t.Fatal(err)
			}
			if m.Bypass != tc.wantEntry || len(m.Rules) != 1 || m.Rules[0].Name != tc.wantRules {
				t.Fatalf("Bypass %q rules %v, want %q and [%s]", m.Bypass, names(m.Rules), tc.wantEntry, tc.wantRules)
			}
			if tc.wantEntry == "" {
				return
			}
			h := m.Hits[0]
			if h.Key != rules.BucketKey(tc.wantEntry, "bypass", tc.wantIdent) || h.Cost != 1 || h.Shadow || m.Rules[0].Exposed() {
				t.Fatalf("hit %+v (exposed %v), want key of %q, cost 1 whatever the request's cost, hidden", h, m.Rules[0].Exposed(), tc.wantIdent)
			}
			if strings.Contains(h.Key, "partner-key") {
				t.Fatal("the bucket key holds the API key in clear")
			}
		})
	}
}

func sluiceCost(r *http.Request, n int64) *http.Request {
	return r.WithContext(sluice.WithCost(r.Context(), n))
}

func names(rs []*rules.Rule) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

// A bypass entry's own limit bounds it: a leaked key buys 3 a second,
// not an unbounded rate.
func TestBypassIsLimited(t *testing.T) {
	set := bypassSet(t)
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock})
	defer store.Close(context.Background())
	var m rules.Matched
	out := make([]sluice.Result, 1)
	var allowed []bool
	for range 5 {
		r := req{target: "/", hdr: []string{"X-API-Key", "partner-key"}}.build()
		if err := set.Resolve(r, &m); err != nil {
			t.Fatal(err)
		}
		if err := store.Take(context.Background(), m.Hits, out); err != nil {
			t.Fatal(err)
		}
		allowed = append(allowed, out[0].Allowed)
	}
	if want := []bool{true, true, true, false, false}; !slices.Equal(allowed, want) {
		t.Fatalf("allowed %v, want %v", allowed, want)
	}
}

func TestHashAPIKey(t *testing.T) {
	// printf %s demo-ops-key | sha256sum
	if got := rulefile.HashAPIKey("demo-ops-key"); got != "sha256:c7d3bcd76d31ed8b7760c96ee2c7b910402310b10ee17bf390c81f2574b119bc" {
		t.Fatalf("HashAPIKey = %s", got)
	}
	// Upper-case hex is accepted too.
	src := strings.Replace(bypassFile, "%s", strings.ToUpper(rulefile.HashAPIKey("partner-key")[7:]), 1)
	src = strings.Replace(src, `["`, `["sha256:`, 1)
	set := mustParse(t, src, testConfig())
	var m rules.Matched
	if err := set.Resolve(req{target: "/", hdr: []string{"X-API-Key", "partner-key"}}.build(), &m); err != nil || m.Bypass != "partner" {
		t.Fatalf("upper-case hash: bypass %q, %v", m.Bypass, err)
	}
}
