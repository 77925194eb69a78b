package rulefile

import (
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/yamlkit"
	"github.com/sluicehq/sluice/rules"
	"go.yaml.in/yaml/v3"
)

var (
	leaseFields  = []string{"enabled", "max_lease", "ttl"}
	hotKeyFields = []string{"threshold", "lease", "split"}
)

// leasePolicy reads a rule's lease and hot_keys blocks into r.Lease:
//
//	lease:             # present: leased (enabled defaults to true)
//	  enabled: true
//	  max_lease: 25    # at least 2; default: the drift bound
//	  ttl: 2s          # 1ms to 1m; default: the lease store's
//	hot_keys:
//	  threshold: 1000  # store calls per second for one key; required
//	  lease: true      # lease hot keys even without a lease block
//	  split: 4         # 2 to 64 sub-buckets, at most the rate and the capacity
func (d *decoder) leasePolicy(f map[string]*yaml.Node, r *rules.Rule) error {
	p := &r.Lease
	if n, ok := f["lease"]; ok {
		lf, err := d.Mapping(n, "lease", leaseFields...)
		if err != nil {
			return err
		}
		if p.Enabled, err = d.optBool(lf["enabled"], "lease.enabled", true); err != nil {
			return err
		}
		if p.MaxLease, err = d.optInt(lf["max_lease"], "lease.max_lease", 0, 2); err != nil {
			return err
		}
		if p.TTL, err = d.duration(lf["ttl"], "lease.ttl", time.Millisecond, time.Minute); err != nil {
			return err
		}
	}
	if n, ok := f["hot_keys"]; ok {
		hf, err := d.Mapping(n, "hot_keys", hotKeyFields...)
		if err != nil {
			return err
		}
		thr, ok := hf["threshold"]
		if !ok {
			return d.Failf(yamlkit.Deref(n), "hot_keys.threshold", "missing (store calls per second from which a key is hot)")
		}
		if p.HotKeys.Threshold, err = d.optInt(thr, "hot_keys.threshold", 0, 1); err != nil {
			return err
		}
		if p.HotKeys.Lease, err = d.optBool(hf["lease"], "hot_keys.lease", false); err != nil {
			return err
		}
		split, err := d.optInt(hf["split"], "hot_keys.split", 0, 2)
		if err != nil {
			return err
		}
		if split > sluice.MaxSplit {
			return d.Failf(yamlkit.Deref(hf["split"]), "hot_keys.split", "%d: at most %d sub-buckets", split, sluice.MaxSplit)
		}
		if split > 0 && (r.Limit.Rate < split || r.Limit.Capacity() < split) {
			return d.Failf(yamlkit.Deref(hf["split"]), "hot_keys.split", "%d: the limit (rate %d, capacity %d) cannot be split into %d sub-buckets of at least 1",
				split, r.Limit.Rate, r.Limit.Capacity(), split)
		}
		p.HotKeys.Split = int(split)
	}
	return nil
}

// duration reads an optional duration from lo to hi; 0 when n is nil.
func (d *decoder) duration(n *yaml.Node, path string, lo, hi time.Duration) (time.Duration, error) {
	if n == nil {
		return 0, nil
	}
	s, err := d.Str(n, path)
	if err != nil {
		return 0, err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, d.Failf(yamlkit.Deref(n), path, "%s is not a duration (write e.g. 500ms or 2s)", yamlkit.Quote(s))
	}
	if v < lo || v > hi {
		return 0, d.Failf(yamlkit.Deref(n), path, "%v: must be from %v to %v", v, lo, hi)
	}
	return v, nil
}
