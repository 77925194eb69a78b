package rules

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice"
)

// Penalty blocks an identity the rule refuses: once the rule refuses it
// After times within the limit's period, every request of that identity
// the rule matches is refused for Block, on every instance sharing the
// store, whatever its bucket holds (a blocked refusal; Retry-After is the
// time left). The block lives in the store with the rule's bucket, so
// resetting the bucket (rules/admin) lifts it. See [sluice.Hit.Block].
type Penalty struct {
	// Block is how long the identity is refused. Required, at most 30
	// days ([sluice.MaxBlock]).
	Block time.Duration
	// After is how many refusals within the limit's period start the
	// block. 0 means 1: the first refusal does.
	After int64
}

// validate reports the field of p that is wrong and why, or "", "" when
// p (nil: no penalty) suits rule r.
func (p *Penalty) validate(r *Rule) (field, problem string) {
	switch {
	case p == nil:
		return "", ""
	case p.Block <= 0:
		return "penalty.block", "a penalty needs a positive block"
	case p.Block > sluice.MaxBlock:
		return "penalty.block", fmt.Sprintf("%v is over the longest block, %v", p.Block, sluice.MaxBlock)
	case p.Block%time.Microsecond != 0:
		return "penalty.block", fmt.Sprintf("%v is not a whole number of microseconds", p.Block)
	case p.After < 0:
		return "penalty.after", fmt.Sprintf("%d: at least 1", p.After)
	case r.Shadow:
		return "penalty", "a shadow rule never refuses, so it cannot block"
	case r.Algorithm == sluice.SlidingLog:
		return "penalty", "not with the sliding_log algorithm"
	}
	return "", ""
}

// block and after are the penalty fields of the rule's hits.
func (p *Penalty) hitFields() (time.Duration, int64) {
	if p == nil {
		return 0, 0
	}
	return p.Block, p.After
}
