package rulefile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/rulefile"
)

// A rule file's count becomes the rule's rules.Count, from YAML and JSON
// alike; a bad one is refused naming the field.
func TestFileCount(t *testing.T) {
	for _, tc := range []struct {
		name, data string
	}{
		{"rules.yaml", "rules:\n  - {name: logins, key: \"header:X-User\", limit: {rate: 5, per: 15m}, count: {status: [401, 5xx], grpc: [Unauthenticated]}}\n"},
		{"rules.json", `{"rules": [{"name": "logins", "key": "header:X-User", "limit": {"rate": 5, "per": "15m"}, "count": {"status": [401, "5xx"], "grpc": ["Unauthenticated"]}}]}`},
	} {
		set, err := rulefile.Parse(tc.name, []byte(tc.data), rulefile.LoadConfig{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		c := set.Rules()[0].Count
		for end, want := range map[rules.Status]bool{
			rules.HTTPStatus(401): true, rules.HTTPStatus(503): true, rules.HTTPStatus(200): false,
			rules.GRPCStatus(16): true, rules.GRPCStatus(0): false,
		} {
			if c.Counts(end) != want {
				t.Errorf("%s: Counts(%v) = %v, want %v", tc.name, end, !want, want)
			}
		}
	}
	_, err := rulefile.Parse("rules.json", []byte(`{"rules": [{"name": "logins", "key": "ip", "limit": {"rate": 5, "per": "1m"}, "count": {"grpc": ["Nope"]}}]}`), rulefile.LoadConfig{})
	var fe *rulefile.FileError
	if !errors.As(err, &fe) || fe.Field != "count.grpc[0]" || fe.Line != 1 || !strings.Contains(err.Error(), `"Nope"`) {
		t.Fatalf("err = %v", err)
	}
}
