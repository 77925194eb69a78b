package rulefile

import (
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/yamlkit"
	"go.yaml.in/yaml/v3"
)

// Calendar limits: limit: {rate: 10000, calendar: month, zone: Europe/Berlin}.
// A calendar limit counts as a fixed window aligned to the zone's
// boundaries, so its entry takes no algorithm (a file's default algorithm
// does not apply to it), no per and no burst.

// hasCalendar reports whether the limit mapping n is written with a
// calendar.
func hasCalendar(n *yaml.Node) bool {
	if n == nil {
		return false
	}
	n = yamlkit.Deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "calendar" {
			return true
		}
	}
	return false
}

// entryAlgorithm reads the algorithm of an entry whose limit is limit:
// fixed window for a calendar limit, which refuses an algorithm written on
// the entry; else the entry's algorithm, or def.
func (d *decoder) entryAlgorithm(f map[string]*yaml.Node, def sluice.Algorithm) (sluice.Algorithm, error) {
	if !hasCalendar(f["limit"]) {
		return d.algorithm(f["algorithm"], "algorithm", def)
	}
	if a := f["algorithm"]; a != nil {
		return 0, d.Failf(yamlkit.Deref(a), "algorithm", "a calendar limit counts as a fixed window aligned to its zone's periods: leave algorithm out")
	}
	return sluice.FixedWindow, nil
}

// calendarLimit reads a limit written with a calendar, f being its fields
// and rate its rate.
func (d *decoder) calendarLimit(n *yaml.Node, f map[string]*yaml.Node, rate int64, a sluice.Algorithm) (fileLimit, error) {
	if per := f["per"]; per != nil {
		return fileLimit{}, d.Failf(yamlkit.Deref(per), "limit.per", "per and calendar are exclusive: a calendar limit counts per period of its calendar; write one of them")
	}
	if b := f["burst"]; b != nil {
		return fileLimit{}, d.Failf(yamlkit.Deref(b), "limit.burst", "a calendar limit has no burst: it admits rate per calendar period; leave burst out")
	}
	s, err := d.Str(f["calendar"], "limit.calendar")
	if err != nil {
		return fileLimit{}, err
	}
	c, err := sluice.ParseCalendar(s)
	if err != nil {
		return fileLimit{}, d.Failf(yamlkit.Deref(f["calendar"]), "limit.calendar", "%s: not a calendar (hour, day, week or month)", yamlkit.Quote(s))
	}
	loc := time.UTC
	if z := f["zone"]; z != nil {
		if loc, err = d.zone(z); err != nil {
			return fileLimit{}, err
		}
	}
	l := fileLimit{Limit: sluice.PerCalendar(rate, c, loc)}
	if err := a.ValidateLimit(l.Limit); err != nil {
		return fileLimit{}, d.Failf(yamlkit.Deref(n), "limit", "%w", err)
	}
	return l, nil
}

// zone reads limit.zone: an IANA time zone name.
func (d *decoder) zone(n *yaml.Node) (*time.Location, error) {
	s, err := d.Str(n, "limit.zone")
	if err != nil {
		return nil, err
	}
	n = yamlkit.Deref(n)
	if s == "" || strings.EqualFold(s, "local") {
		return nil, d.Failf(n, "limit.zone", "%s: name a time zone, such as UTC or Europe/Berlin (the local zone differs from machine to machine)", yamlkit.Quote(s))
	}
	loc, err := loadZone(s)
	if err != nil {
		return nil, d.Failf(n, "limit.zone", "unknown time zone %s: write an IANA name such as Europe/Berlin (the zone database must be on the system, or the program must import time/tzdata)", yamlkit.Quote(s))
	}
	return loc, nil
}

// zones holds the zones loaded, by name, so that reloading a file gives
// its limits the same *time.Location, hence equal limits.
var zones sync.Map

// loadZone returns the zone named name, loaded once.
func loadZone(name string) (*time.Location, error) {
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	actual, _ := zones.LoadOrStore(name, loc)
	return actual.(*time.Location), nil
}
