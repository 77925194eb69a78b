package envoy

import (
	"github.com/sluicehq/sluice/internal/yamlkit"
	"go.yaml.in/yaml/v3"
)

// refuseConcurrency fails a descriptor or a rate limit that asks for a
// concurrency limit (as a rule file's concurrency: {max, hold} does):
// Envoy asks the service before a request and never tells it when the
// request ends, so a slot could never be freed.
func (d *decoder) refuseConcurrency(n *yaml.Node, path string) error {
	v := yamlkit.Deref(n)
	if v == nil || v.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		if k := v.Content[i]; k.Value == "concurrency" {
			return d.Failf(k, yamlkit.Sub(path, "concurrency"), "the Envoy service never sees a request end, so it cannot free a concurrency slot: limit requests in flight in the service itself (sluice's middleware or gRPC interceptors)")
		}
	}
	return nil
}
