package rulefile

import (
	"strings"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/ascii"
	"github.com/sluicehq/sluice/internal/yamlkit"
	"github.com/sluicehq/sluice/rules"
	"go.yaml.in/yaml/v3"
)

// The fields of each part of a rule file.
var (
	topFields     = []string{"version", "defaults", "rules", "bypass"}
	defaultFields = []string{"algorithm", "on_fail", "expose", "shadow"}
	ruleFields    = []string{"name", "key", "limit", "algorithm", "cost", "max_cost", "on_fail", "expose", "shadow", "enabled", "match", "plans", "key_required", "lease", "hot_keys", "colocate", "count", "overrides", "max_limit", "penalty", "concurrency"}
)

// FileVersion is the rule file format version this package reads. A file
// may state it as "version: 1"; a file stating another is refused.
const FileVersion = 1

// maxNameLen bounds rule and bypass names in files: they appear in every
// response's headers.
const maxNameLen = 128

// fileDefaults are the values of the defaults section.
type fileDefaults struct {
	algorithm sluice.Algorithm
	onFail    rules.OnFail
	expose    bool
	shadow    bool
}

// ruleFile decodes a whole file into a Set.
func (d *decoder) ruleFile(root *yaml.Node) (*rules.Set, error) {
	if root == nil || yamlkit.Deref(root).Kind == yaml.ScalarNode && yamlkit.Deref(root).Tag == "!!null" {
		return nil, d.Failf(nil, "", "empty file: no rules")
	}
	top, err := d.Mapping(root, "", topFields...)
	if err != nil {
		return nil, err
	}
	if n, ok := top["version"]; ok {
		v, err := d.Integer(n, "version")
		if err != nil {
			return nil, err
		}
		if v != FileVersion {
			return nil, d.Failf(n, "version", "%d is not supported (this sluice reads version %d)", v, FileVersion)
		}
	}
	defs := fileDefaults{expose: true}
	if n, ok := top["defaults"]; ok {
		if err := d.defaults(n, &defs); err != nil {
			return nil, err
		}
	}
	names := make(map[string]int) // rule and bypass names, and their lines
	enabled, err := d.ruleList(root, top["rules"], defs, names)
	if err != nil {
		return nil, err
	}
	var bypass []rules.Bypass
	if n, ok := top["bypass"]; ok {
		if bypass, err = d.bypassList(n, defs, names); err != nil {
			return nil, err
		}
	}
	set, err := rules.New(enabled...)
	if err == nil {
		set, err = set.WithBypass(bypass...)
	}
	if err != nil { // the checks above should have caught it
		return nil, d.Failf(nil, "", "%w", err)
	}
	return set, nil
}

// ruleList decodes the rules section and returns the enabled rules.
func (d *decoder) ruleList(root, n *yaml.Node, defs fileDefaults, names map[string]int) ([]rules.Rule, error) {
	if n == nil {
		return nil, d.Failf(root, "rules", "missing: a rule file defines at least one rule")
	}
	seq, err := d.Sequence(n, "rules", "a list of rules")
	if err != nil {
		return nil, err
	}
	if len(seq.Content) == 0 {
		return nil, d.Failf(seq, "rules", "empty: a rule file defines at least one rule")
	}
	var enabled []rules.Rule
	for i, item := range seq.Content {
		r, on, err := d.rule(item, i, defs, names)
		if err != nil {
			return nil, err
		}
		if on {
			enabled = append(enabled, r)
		}
	}
	d.leave()
	if len(enabled) == 0 {
		return nil, d.Failf(seq, "rules", "every rule is disabled: enable at least one (a limiter without rules limits nothing)")
	}
	return enabled, nil
}

// defaults decodes the defaults section into defs.
func (d *decoder) defaults(n *yaml.Node, defs *fileDefaults) error {
	f, err := d.Mapping(n, "defaults", defaultFields...)
	if err != nil {
		return err
	}
	if defs.algorithm, err = d.algorithm(f["algorithm"], "defaults.algorithm", defs.algorithm); err != nil {
		return err
	}
	if defs.onFail, err = d.onFail(f["on_fail"], "defaults.on_fail", defs.onFail); err != nil {
		return err
	}
	if defs.expose, err = d.optBool(f["expose"], "defaults.expose", defs.expose); err != nil {
		return err
	}
	defs.shadow, err = d.optBool(f["shadow"], "defaults.shadow", defs.shadow)
	return err
}

// entryName reads and checks the name of a rule or bypass entry n, whose
// fields are f, and records it in names.
func (d *decoder) entryName(n *yaml.Node, f map[string]*yaml.Node, names map[string]int) (string, error) {
	v, ok := f["name"]
	if !ok {
		return "", d.Failf(n, "name", "missing")
	}
	name, err := d.Str(v, "name")
	if err != nil {
		return "", err
	}
	v = yamlkit.Deref(v)
	switch {
	case name == "":
		return "", d.Failf(v, "name", "must not be empty")
	case !ascii.Printable(name):
		return "", d.Failf(v, "name", "must be printable ASCII")
	case len(name) > maxNameLen:
		return "", d.Failf(v, "name", "longer than %d bytes", maxNameLen)
	}
	if line, dup := names[name]; dup {
		return "", d.Failf(v, "name", "%s is already used by the entry at line %d", yamlkit.Quote(name), line)
	}
	names[name] = v.Line
	return name, nil
}

// peekName returns the name of entry n when it has a usable one, so that
// errors about its other fields can name it; else "".
func peekName(n *yaml.Node) string {
	n = yamlkit.Deref(n)
	if n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k, v := yamlkit.Deref(n.Content[i]), yamlkit.Deref(n.Content[i+1]); k.Value == "name" && v.Kind == yaml.ScalarNode {
			if v.Tag != "!!null" && v.Value != "" && ascii.Printable(v.Value) && len(v.Value) <= maxNameLen {
				return v.Value
			}
			return ""
		}
	}
	return ""
}

// algorithm reads an algorithm name, or returns def when n is nil.
func (d *decoder) algorithm(n *yaml.Node, path string, def sluice.Algorithm) (sluice.Algorithm, error) {
	if n == nil {
		return def, nil
	}
	s, err := d.Str(n, path)
	if err != nil {
		return 0, err
	}
	a, err := sluice.ParseAlgorithm(s)
	if err != nil {
		return 0, d.Failf(yamlkit.Deref(n), path, "%s", strings.TrimPrefix(err.Error(), "sluice: "))
	}
	return a, nil
}

// onFail reads an on_fail policy, or returns def when n is nil.
func (d *decoder) onFail(n *yaml.Node, path string, def rules.OnFail) (rules.OnFail, error) {
	if n == nil {
		return def, nil
	}
	s, err := d.Str(n, path)
	if err != nil {
		return 0, err
	}
	f, err := rules.ParseOnFail(s)
	if err != nil {
		return 0, d.Failf(yamlkit.Deref(n), path, "unknown policy %s (known: open, closed, local)", yamlkit.Quote(s))
	}
	return f, nil
}

// optBool reads an optional boolean.
func (d *decoder) optBool(n *yaml.Node, path string, def bool) (bool, error) {
	if n == nil {
		return def, nil
	}
	return d.Boolean(n, path)
}

// optInt reads an optional whole number of at least min.
func (d *decoder) optInt(n *yaml.Node, path string, def, min int64) (int64, error) {
	if n == nil {
		return def, nil
	}
	v, err := d.Integer(n, path)
	if err != nil {
		return 0, err
	}
	if v < min {
		return 0, d.Failf(yamlkit.Deref(n), path, "%d: must be at least %d", v, min)
	}
	return v, nil
}
