package rulefile

import (
	"github.com/sluicehq/sluice/internal/yamlkit"
	"github.com/sluicehq/sluice/rules"
	"go.yaml.in/yaml/v3"
)

var countFields = []string{"status", "grpc"}

// count reads a rule's count block into r.Count: the responses the rule
// counts (see [rules.Count]), the others given back.
//
//	count:
//	  status: [401, 403, 5xx]                         # HTTP statuses, or classes
//	  grpc: [Unauthenticated, PermissionDenied]       # gRPC codes by name
func (d *decoder) count(n *yaml.Node, r *rules.Rule) error {
	if n == nil {
		return nil
	}
	f, err := d.Mapping(n, "count", countFields...)
	if err != nil {
		return err
	}
	if len(f) == 0 {
		return d.Failf(yamlkit.Deref(n), "count", "lists no status: give status (HTTP statuses or classes such as 5xx) or grpc (gRPC codes), or leave count out to count every request")
	}
	c := &rules.Count{}
	if s, ok := f["status"]; ok {
		if _, err := d.Strings(s, "count.status", false, func(s string) (string, error) {
			status, class, err := rules.ParseStatus(s)
			if err != nil {
				return "", err
			}
			if class > 0 {
				c.Classes = append(c.Classes, class)
			} else {
				c.Status = append(c.Status, status)
			}
			return s, nil
		}); err != nil {
			return err
		}
	}
	if g, ok := f["grpc"]; ok {
		if _, err := d.Strings(g, "count.grpc", false, func(s string) (string, error) {
			code, err := rules.ParseGRPCCode(s)
			if err != nil {
				return "", err
			}
			c.GRPC = append(c.GRPC, code)
			return s, nil
		}); err != nil {
			return err
		}
	}
	r.Count = c
	return nil
}
