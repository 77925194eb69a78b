package admin

import (
	"fmt"
	"net/netip"

	"github.com/sluicehq/sluice/keyfunc"
)

var ipv6Probe = netip.MustParseAddr("2001:db8::1")

// WithIPv6Prefix sets how the identities of ip rules are grouped,
// replacing the grouping of each rule's key.
//
// Deprecated: an ip key reads identities with its own grouping (see
// [keyfunc.Key.Parse]), which is the grouping of the requests it keys;
// leave this option out. To read ip identities otherwise, use
// [WithIdentity] for kind "ip".
func WithIPv6Prefix(bits int) Option {
	return func(c *config) error {
		if _, err := keyfunc.IPKey(keyfunc.Normalize(ipv6Probe), bits); err != nil {
			return fmt.Errorf("%w: WithIPv6Prefix: %w", ErrInvalidConfig, err)
		}
		c.ipv6Prefix = bits
		return nil
	}
}
