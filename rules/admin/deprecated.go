package admin

import (
	"fmt"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
)

// WithIPv6Prefix sets how the identities of ip rules are grouped,
// replacing the grouping of each rule's key.
//
// Deprecated: an ip key reads identities with its own grouping (see
// [keyfunc.Key.Parse]), which is the grouping of the requests it keys;
// leave this option out. To read ip identities otherwise, use
// [WithIdentity] for kind "ip".
func WithIPv6Prefix(bits int) Option {
	return optionFunc(func(c *config) error {
		key, err := keyfunc.IP(keyfunc.IPConfig{IPv6Prefix: bits})
		if err != nil {
			return fmt.Errorf("%w: admin: WithIPv6Prefix: %w", sluice.ErrInvalidConfig, err)
		}
		c.ipParse = nil
		if bits != 0 {
			c.ipParse = key.Parse
		}
		return nil
	})
}
