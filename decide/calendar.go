package decide

import (
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
)

// anyCalendar reports whether a policy has a calendar limit, whose window
// in the headers is the length of its period at the time of the request.
func anyCalendar(ps []headers.Policy) bool {
	for i := range ps {
		if ps[i].Result.Limit.Calendar != sluice.NoCalendar {
			return true
		}
	}
	return false
}
