package rulefile_test

import (
	"testing"
	_ "time/tzdata" // the zones of the calendar fixtures, whatever the machine has

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/rules/rulefile"
)

// A file read again gives its calendar limits the same zone, so the
// limits are equal (as stores compare them); a bypass entry's calendar
// limit is a fixed window too.
func TestCalendarLimitsReloadEqual(t *testing.T) {
	const file = `
rules:
  - name: monthly
    key: api_key
    limit: {rate: 10000, calendar: month, zone: Europe/Berlin}
bypass:
  - name: office
    cidrs: [203.0.113.0/24]
    limit: {rate: 100, calendar: day, zone: Europe/Berlin}
`
	var limits [2]sluice.Limit
	for i := range limits {
		set, err := rulefile.Parse("calendar.yaml", []byte(file), rulefile.LoadConfig{})
		if err != nil {
			t.Fatal(err)
		}
		limits[i] = set.Rules()[0].Limit
		b := set.BypassEntries()[0]
		if b.Algorithm != sluice.FixedWindow || b.Limit.Calendar != sluice.Day || b.Limit.String() != "100/day Europe/Berlin" {
			t.Fatalf("bypass %+v, want 100/day Europe/Berlin as a fixed window", b)
		}
	}
	if limits[0] != limits[1] || limits[0].String() != "10000/month Europe/Berlin" {
		t.Fatalf("%v and %v: a reload changed the limit", limits[0], limits[1])
	}
}
