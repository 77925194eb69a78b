package headers

import (
	"time"

	"github.com/sluicehq/sluice"
)

// QuotaAt is [Quota] at the time now. For a calendar limit
// ([sluice.Limit.Calendar]) the window w is the length of the calendar
// period holding now, in whole seconds rounded up (86,400 for most days,
// 82,800 and 90,000 on the days daylight saving time starts and ends),
// and the quota q is Rate. For any other limit it is Quota(l).
func QuotaAt(l sluice.Limit, now time.Time) (q, w int64) {
	if l.Calendar == sluice.NoCalendar {
		return Quota(l)
	}
	start, end := l.Window(now)
	return clamp(l.Rate), clamp(max(ceilSeconds(end.Sub(start)), 1))
}
