package middleware_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, whatever the machine has

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules/rulefile"
)

// calendarRules: 3 a day per tenant in zone ZONE, 6 for acme, and at most
// 5 for a limit the application sets.
const calendarRules = `
rules:
  - name: daily
    key: header:X-Tenant
    limit: {rate: 3, calendar: day, zone: ZONE}
    max_limit: {rate: 5, calendar: day, zone: ZONE}
    overrides:
      - identities: [acme]
        limit: {rate: 6, calendar: day, zone: ZONE}
`

// dayZone returns a zone whose next midnight is more than ten minutes
// away, so that no request of the test crosses it.
func dayZone(t *testing.T) *time.Location {
	for _, name := range []string{"America/New_York", "Europe/Berlin", "Asia/Tokyo"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, end := sluice.PerCalendar(1, sluice.Day, loc).Window(time.Now()); time.Until(end) > 10*time.Minute {
			return loc
		}
	}
	t.Fatal("no zone far from midnight") // the three are 5 or more hours apart
	return nil
}

// Real HTTP over the middleware on Redis, a single node and a 3-master
// cluster: a tenant at 3 a day gets its 4th request refused with a
// Retry-After of the seconds until the zone's next midnight; an override
// admits its identity to its own limit while others get the rule's; a
// limit the application sets above max_limit is capped.
func TestCalendarOnRedis(t *testing.T) {
	loc := dayZone(t)
	set, err := rulefile.Parse("calendar.yaml", []byte(strings.ReplaceAll(calendarRules, "ZONE", loc.String())), rulefile.LoadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	stores := singleAndCluster(t)
	plan := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if v := r.Header.Get("X-Plan-Limit"); v != "" {
				n, _ := strconv.ParseInt(v, 10, 64)
				// Only a rate: the rule's calendar and zone.
				r = r.WithContext(sluice.WithLimit(r.Context(), "daily", sluice.Limit{Rate: n}))
			}
			next.ServeHTTP(w, r)
		})
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			lim := middleware.Limit(st.store(t), set, decide.WithBudget(5*time.Second))
			h := serve(t, func(next http.Handler) http.Handler { return plan(lim(next)) }, &okHandler{})
			tenant := strconv.FormatInt(time.Now().UnixNano(), 36) // a day's buckets outlive a run
			for _, tc := range []struct {
				tenant, plan string
				admitted     int
			}{
				{"initech-" + tenant, "", 3},     // the rule's limit
				{"acme", "", 6},                  // its override (acme's bucket is fresh per store)
				{"umbrella-" + tenant, "100", 5}, // the application's 100, capped by max_limit
				{"hooli-" + tenant, "2", 2},      // the application's 2
			} {
				for i := range tc.admitted + 1 {
					hdr := []string{"X-Tenant", tc.tenant}
					if tc.plan != "" {
						hdr = append(hdr, "X-Plan-Limit", tc.plan)
					}
					sent := time.Now()
					start, end := sluice.PerCalendar(1, sluice.Day, loc).Window(sent)
					resp := get(t, h.Client(), h.URL, hdr...)
					after := time.Now()
					want := http.StatusOK
					if i == tc.admitted {
						want = http.StatusTooManyRequests
					}
					if resp.StatusCode != want {
						t.Fatalf("%s: request %d: %d, want %d", tc.tenant, i+1, resp.StatusCode, want)
					}
					w := strconv.Itoa(int(end.Sub(start) / time.Second))
					if p, want := resp.Header.Get("RateLimit-Policy"), `"daily";q=`+strconv.Itoa(tc.admitted)+`;w=`+w; p != want {
						t.Fatalf("%s: RateLimit-Policy %q, want %q", tc.tenant, p, want)
					}
					if want != http.StatusTooManyRequests {
						continue
					}
					// Rounded up, ±1 s: the seconds left until midnight
					// between when the request left and its answer came.
					got, err := strconv.ParseInt(resp.Header.Get("Retry-After"), 10, 64)
					lo, hi := ceilSeconds(end.Sub(after))-1, ceilSeconds(end.Sub(sent))+1
					if err != nil || got < lo || got > hi {
						t.Fatalf("%s: Retry-After %q, want %d to %d, the seconds until %v", tc.tenant, resp.Header.Get("Retry-After"), lo, hi, end.In(loc))
					}
				}
			}
		})
	}
}

func ceilSeconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }
