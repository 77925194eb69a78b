package sluicegrpc

import (
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/headers"
)

// refuse returns the refusal of a call: the deny handler's error for the
// [Denial] of the enforcing rules that refused it, with retry-after in h
// (the longest wait among them, none when one never can pass) and the
// pushback trailer.
func (l *Limiter) refuse(r *http.Request, h http.Header, s *scratch) error {
	d := Denial{FullMethod: r.URL.Path, RetryAfter: s.d.RetryAfter(), Unsatisfiable: s.d.Unsatisfiable()}
	for i, rule := range s.m.Rules {
		if s.d.Refusing(i) && rule.Exposed() {
			d.Violations = append(d.Violations, Violation{
				Rule: headers.SanitizeName(rule.Name), Kind: rule.Key.Kind(), Limit: rule.Limit,
			})
		}
	}
	if d.Unsatisfiable {
		d.RetryAfter = 0
	} else {
		headers.SetRetryAfter(h, d.RetryAfter)
		if l.cfg.pushback {
			h.Set(pushbackKey, strconv.FormatInt(ceilMillis(d.RetryAfter), 10))
		}
	}
	return l.cfg.deny(r.Context(), d)
}

// ceilMillis returns d in whole milliseconds rounded up, at least 1.
func ceilMillis(d time.Duration) int64 {
	ms := int64((d + time.Millisecond - 1) / time.Millisecond)
	return max(ms, 1)
}
