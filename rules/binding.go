package rules

import (
	"time"

	"github.com/sluicehq/sluice"
)

// Binding returns the index of the exposed rule whose result the response
// headers describe, or -1 when no matched rule is exposed.
//
// For a request that was not admitted it is the exposed enforcing rule that
// denied it for longest: one whose cost can never pass, else the longest
// RetryAfter (when only hidden rules denied, the exposed rules are described
// as for an admitted request). For an admitted request it is the exposed rule closest to its
// limit: the fewest Remaining, then the longest ResetAfter.
func Binding(matched []*Rule, results []sluice.Result, admitted bool) int {
	return binding(results, admitted, func(i int) bool { return matched[i].Exposed() })
}

// BindingResult is [Binding] for results that all belong to exposed rules,
// such as the policies of several limiters a request passed through: the
// index of the binding result, or -1 for none.
func BindingResult(results []sluice.Result, admitted bool) int {
	return binding(results, admitted, nil)
}

// binding is Binding over the results for which exposed (nil: all)
// reports true.
func binding(results []sluice.Result, admitted bool, exposed func(i int) bool) int {
	best := -1
	for i := range results {
		if (exposed != nil && !exposed(i)) || (!admitted && results[i].Allowed) {
			continue
		}
		if best < 0 || binds(results[i], results[best], admitted) {
			best = i
		}
	}
	if best < 0 && !admitted {
		// Only hidden rules denied: describe the exposed rules as they stand.
		return binding(results, true, exposed)
	}
	return best
}

func binds(a, b sluice.Result, admitted bool) bool {
	if !admitted {
		if a.Unsatisfiable != b.Unsatisfiable {
			return a.Unsatisfiable
		}
		return a.RetryAfter > b.RetryAfter
	}
	if a.Remaining != b.Remaining {
		return a.Remaining < b.Remaining
	}
	return a.ResetAfter > b.ResetAfter
}

// RetryAfter returns how long a refused request must wait before it could
// pass: the longest RetryAfter among the enforcing rules that denied it. ok
// is false when one of them can never pass (its cost exceeds the capacity).
func RetryAfter(matched []*Rule, results []sluice.Result) (d time.Duration, ok bool) {
	for i, r := range matched {
		if r.Shadow || results[i].Allowed {
			continue
		}
		if results[i].Unsatisfiable {
			return 0, false
		}
		d = max(d, results[i].RetryAfter)
	}
	return d, true
}
