package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestRunMergeDomains: MERGE_DOMAIN_CONFIG=true, as envoyproxy/ratelimit
// reads it, or -merge-domains, lets two files define one domain; without
// it the second is refused; a value that is not a boolean is an error.
func TestRunMergeDomains(t *testing.T) {
	a := writeFile(t, "a.yaml", good)
	b := writeFile(t, "b.yaml", "domain: edge\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 5}\n")
	check := []string{"-config", a, "-config", b, "-check"}
	for _, tc := range []struct {
		env  string
		args []string
		want string // "" for accepted
	}{
		{"", check, `domain "edge": domain: defined twice`},
		{"false", check, `domain "edge": domain: defined twice`},
		{"true", check, ""},
		{"1", check, ""},
		{"", append([]string{"-merge-domains"}, check...), ""},
		{"true", append([]string{"-merge-domains=false"}, check...), `defined twice`},
		{"maybe", check, `$MERGE_DOMAIN_CONFIG: "maybe" is not true or false`},
	} {
		t.Setenv("MERGE_DOMAIN_CONFIG", tc.env)
		err := run(context.Background(), tc.args, io.Discard, nil)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("MERGE_DOMAIN_CONFIG=%q %v: %v", tc.env, tc.args[:len(tc.args)-5], err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("MERGE_DOMAIN_CONFIG=%q %v: %v, want %s", tc.env, tc.args[:len(tc.args)-5], err, tc.want)
		}
	}
}

// TestDynamicMetadataSetting: RESPONSE_DYNAMIC_METADATA=true, or
// -dynamic-metadata, turns dynamic metadata on.
func TestDynamicMetadataSetting(t *testing.T) {
	for _, tc := range []struct {
		env  string
		args []string
		want bool
	}{
		{"", nil, false},
		{"true", nil, true},
		{"", []string{"-dynamic-metadata"}, true},
		{"true", []string{"-dynamic-metadata=false"}, false},
	} {
		t.Setenv("RESPONSE_DYNAMIC_METADATA", tc.env)
		f, err := parseFlags(append(tc.args, "-config", "x.yaml"), io.Discard)
		if err != nil {
			t.Errorf("RESPONSE_DYNAMIC_METADATA=%q %v: %v", tc.env, tc.args, err)
		} else if f.metadata != tc.want {
			t.Errorf("RESPONSE_DYNAMIC_METADATA=%q %v: %v, want %v", tc.env, tc.args, f.metadata, tc.want)
		}
	}
	t.Setenv("RESPONSE_DYNAMIC_METADATA", "yes")
	if _, err := parseFlags([]string{"-config", "x.yaml"}, io.Discard); err == nil || !strings.Contains(err.Error(), "RESPONSE_DYNAMIC_METADATA") {
		t.Errorf("RESPONSE_DYNAMIC_METADATA=yes: %v", err)
	}
}
