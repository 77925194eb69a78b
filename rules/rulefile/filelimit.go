package rulefile

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/yamlkit"
	"go.yaml.in/yaml/v3"
)

var limitFields = []string{"rate", "per", "burst", "calendar", "zone"}

// maxDays bounds the "Nd" period form, far beyond any valid limit.
const maxDays = 100 * 365

// limit reads the limit of entry entry, enforced by a.
func (d *decoder) limit(entry, n *yaml.Node, a sluice.Algorithm) (fileLimit, error) {
	if n == nil {
		return fileLimit{}, d.Failf(entry, "limit", "missing (e.g. {rate: 100, per: 1m})")
	}
	f, err := d.Mapping(n, "limit", limitFields...)
	if err != nil {
		return fileLimit{}, err
	}
	var l fileLimit
	rate, ok := f["rate"]
	if !ok {
		return fileLimit{}, d.Failf(yamlkit.Deref(n), "limit.rate", "missing")
	}
	if l.Rate, err = d.optInt(rate, "limit.rate", 0, 1); err != nil {
		return fileLimit{}, err
	}
	if _, ok := f["calendar"]; ok {
		return d.calendarLimit(n, f, l.Rate, a)
	}
	if z := f["zone"]; z != nil {
		return fileLimit{}, d.Failf(yamlkit.Deref(z), "limit.zone", "a zone belongs to a calendar limit: add calendar (hour, day, week or month)")
	}
	if l.Period, err = d.period(yamlkit.Deref(n), f["per"]); err != nil {
		return fileLimit{}, err
	}
	if b, ok := f["burst"]; ok {
		if l.Burst, err = d.optInt(b, "limit.burst", 0, 1); err != nil {
			return fileLimit{}, err
		}
		if a != sluice.TokenBucket && l.Burst != l.Rate {
			return fileLimit{}, d.Failf(yamlkit.Deref(b), "limit.burst", "%v has no burst: it admits rate per period; leave burst out", a)
		}
		l.burst = b
	}
	if err := a.ValidateLimit(l.Limit); err != nil {
		return fileLimit{}, d.Failf(yamlkit.Deref(n), "limit", "%w", err)
	}
	return l, nil
}

// period reads limit.per.
func (d *decoder) period(limit, n *yaml.Node) (time.Duration, error) {
	const path = "limit.per"
	if n == nil {
		return 0, d.Failf(limit, path, "missing (a duration such as 1s, 1m, 1h or 1d, or a calendar: hour, day, week or month)")
	}
	if v := yamlkit.Deref(n); v.Kind == yaml.ScalarNode && (v.Tag == "!!int" || v.Tag == "!!float") {
		return 0, d.Failf(v, path, "%s has no unit: write a duration such as %ss", yamlkit.Quote(v.Value), v.Value)
	}
	s, err := d.Str(n, path)
	if err != nil {
		return 0, err
	}
	n = yamlkit.Deref(n)
	p, err := parsePeriod(s)
	if err != nil {
		return 0, d.Failf(n, path, "%s: %v", yamlkit.Quote(s), err)
	}
	switch {
	case p < time.Millisecond:
		return 0, d.Failf(n, path, "%s: must be at least 1ms", yamlkit.Quote(s))
	case p%time.Microsecond != 0:
		return 0, d.Failf(n, path, "%s: must be a whole number of microseconds", yamlkit.Quote(s))
	}
	return p, nil
}

// parsePeriod parses a Go duration ("1m", "1h30m", "100ms") or a whole
// number of days ("1d").
func parsePeriod(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 1 || n > maxDays {
			return 0, errors.New("not a duration (days are a whole number, e.g. 1d)")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	p, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("not a duration (write e.g. 100ms, 1s, 1m, 1h or 1d)")
	}
	return p, nil
}
