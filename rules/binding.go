package rules

import "github.com/sluicehq/sluice"

// BindingResult returns the index of the result the response headers
// describe, or -1 when results is empty. Every result must belong to an
// exposed rule: the caller leaves out shadow and hidden rules first.
//
// For a request that was not admitted it is the result that denied it for
// longest: one whose cost can never pass, else the longest RetryAfter (when
// no result denied, the results are described as for an admitted request).
// For an admitted request it is the result closest to its limit: the fewest
// Remaining, then the longest ResetAfter.
func BindingResult(results []sluice.Result, admitted bool) int {
	best := -1
	for i := range results {
		if !admitted && results[i].Allowed {
			continue
		}
		if best < 0 || binds(results[i], results[best], admitted) {
			best = i
		}
	}
	if best < 0 && !admitted {
		// No exposed result denied: describe them as they stand.
		return BindingResult(results, true)
	}
	return best
}

// binds reports whether result a describes the request better than b.
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
