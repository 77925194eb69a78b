package envoy_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/envoy"
)

// peerCorpus returns the folder of envoyproxy/ratelimit's own
// configuration files, copied with upstream's license into shared/, which
// the folder above the repository holds. Where it is absent the test
// skips, saying so, unless REQUIRE_CORPUS=1 or REQUIRE_REDIS=1 (which CI
// sets) is set: then it fails.
func peerCorpus(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "shared", "envoy-peer"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "LICENSE")); err != nil {
		if os.Getenv("REQUIRE_CORPUS") == "1" || os.Getenv("REQUIRE_REDIS") == "1" {
			t.Fatalf("envoyproxy/ratelimit's configuration files are not at %s (REQUIRE_CORPUS or REQUIRE_REDIS is set): %v", dir, err)
		}
		t.Skipf("envoyproxy/ratelimit's configuration files are not at %s, so they are not checked (set REQUIRE_CORPUS=1 to fail instead): %v", dir, err)
	}
	return dir
}

// corpusVerdicts are upstream's verdicts on each of its configuration
// files, loaded alone: "" where it accepts the file, else where and why
// sluice refuses it, as sluice's message says it. Upstream refuses the
// same files for the same reasons (its tests name them: test/config/
// config_test.go).
var corpusVerdicts = map[string]string{
	"examples/ratelimit/config/config.yaml":                                  "",
	"examples/ratelimit/config/example.yaml":                                 "", // requests_per_unit: 0, quota_mode, metadata
	"test/config/basic_config.yaml":                                          "",
	"test/config/duplicate_domain.yaml":                                      "", // refused beside basic_config.yaml (see TestCorpusCombined)
	"test/config/merge_domain_key1.yaml":                                     "",
	"test/config/merge_domain_key2.yaml":                                     "",
	"test/config/metadata.yaml":                                              "",
	"test/config/shadowmode_config.yaml":                                     "",
	"test/config/share_threshold.yaml":                                       "",
	"test/config/wildcard.yaml":                                              "",
	"test/integration/runtime/current/ratelimit/config/another.yaml":         "",
	"test/integration/runtime/current/ratelimit/config/basic.yaml":           "",
	"test/integration/runtime/current/ratelimit/config/share_threshold.yaml": "",
	"test/integration/runtime/current/ratelimit/reload.yaml":                 "", // requests_per_unit: 0

	"test/config/bad_limit_unit.yaml":      `bad_limit_unit.yaml:6: domain "test-domain": descriptors[0].rate_limit.unit: "foo" is not a unit`,
	"test/config/bad_yaml.yaml":            `bad_yaml.yaml:2: invalid YAML`,
	"test/config/duplicate_key.yaml":       `duplicate_key.yaml:6: domain "test-domain": descriptors[1]: a second descriptor with key "key1" and value "value1" at this level (first at line 3)`,
	"test/config/empty_domain.yaml":        `empty_domain.yaml:1: domain: missing`,
	"test/config/empty_key.yaml":           `empty_key.yaml:3: domain "test-domain": descriptors[0].key: missing`,
	"test/config/misspelled_key.yaml":      `misspelled_key.yaml:5: domain "test-domain": descriptors[0]: unknown field "ratelimit" (did you mean "rate_limit"?)`,
	"test/config/misspelled_key2.yaml":     `misspelled_key2.yaml:7: domain "test-domain": descriptors[0].rate_limit: unknown field "requestsperunit" (did you mean "requests_per_unit"?)`,
	"test/config/non_map_list.yaml":        `non_map_list.yaml:3: domain "test-domain": descriptors[0]: must be a mapping (name: value), not a string`,
	"test/config/non_string_key.yaml":      `non_string_key.yaml:1: unknown field "0.25"`,
	"test/config/replaces_empty.yaml":      `replaces_empty.yaml:10: domain "test-domain": descriptors[0].descriptors[0].rate_limit.replaces[0].name: must be a string, not null`,
	"test/config/replaces_self.yaml":       `replaces_self.yaml:10: domain "test-domain": descriptors[0].descriptors[0].rate_limit.replaces[0].name: "self" is this rate limit's own name`,
	"test/config/unlimited_with_unit.yaml": `unlimited_with_unit.yaml:6: domain "test-domain": descriptors[0].rate_limit.unit: not with unlimited: true`,
}

// notRateLimitConfig are the corpus's files that are not rate limit
// configuration: Envoy's own.
var notRateLimitConfig = []string{"examples/envoy/proxy.yaml"}

// TestCorpus: every configuration file envoyproxy/ratelimit accepts loads
// as it is, and every file it refuses is refused, naming the file, the
// line and the field; a corpus file the table does not know fails the
// test, so that a new one gets a verdict.
func TestCorpus(t *testing.T) {
	dir := peerCorpus(t)
	var seen []string
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		seen = append(seen, rel)
		if slices.Contains(notRateLimitConfig, rel) {
			return nil
		}
		want, ok := corpusVerdicts[rel]
		if !ok {
			t.Errorf("%s: no verdict for this corpus file", rel)
			return nil
		}
		_, err = envoy.LoadMapping([]string{path})
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: refused, upstream accepts it: %v", rel, err)
		case want != "" && err == nil:
			t.Errorf("%s: accepted, upstream refuses it; want %s", rel, want)
		case want != "" && !strings.Contains(err.Error(), want):
			t.Errorf("%s: refused with\n  %v\nwant\n  %s", rel, err, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel := range corpusVerdicts {
		if !slices.Contains(seen, rel) {
			t.Errorf("%s: not in the corpus", rel)
		}
	}
}

// TestCorpusCombined: files loaded together, as envoyproxy/ratelimit's
// tests load them: a domain in two files is refused unless the domains
// are merged (MERGE_DOMAIN_CONFIG=true), and merged documents may not
// repeat a top-level descriptor.
func TestCorpusCombined(t *testing.T) {
	dir := peerCorpus(t)
	file := func(name string) string { return filepath.Join(dir, "test", "config", name) }
	merge := []envoy.MappingOption{envoy.MergeDomains()}
	for _, tc := range []struct {
		files []string
		opts  []envoy.MappingOption
		want  string // "" for accepted
	}{
		{[]string{file("basic_config.yaml"), file("duplicate_domain.yaml")}, nil,
			`duplicate_domain.yaml:1: domain "test-domain": domain: defined twice (first at ` + file("basic_config.yaml") + `:2)`},
		{[]string{file("basic_config.yaml"), file("duplicate_domain.yaml")}, merge, ""},
		{[]string{file("merge_domain_key1.yaml"), file("merge_domain_key2.yaml")}, nil,
			`merge_domain_key2.yaml:2: domain "test-domain": domain: defined twice`},
		{[]string{file("merge_domain_key1.yaml"), file("merge_domain_key2.yaml")}, merge, ""},
		{[]string{file("merge_domain_key1.yaml"), file("merge_domain_key1.yaml")}, merge,
			`merge_domain_key1.yaml:5: domain "test-domain": descriptors[0]: a second descriptor with key "key1" and value "value1" at the top of the domain (first at ` + file("merge_domain_key1.yaml") + `:5)`},
	} {
		_, err := envoy.LoadMapping(tc.files, tc.opts...)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v (merged %v): %v", tc.files, tc.opts != nil, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v (merged %v) = %v, want %s", tc.files, tc.opts != nil, err, tc.want)
		}
	}
}
