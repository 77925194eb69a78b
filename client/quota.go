package client

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Quota is what a response's rate-limit fields say about the requests the
// client may still send.
type Quota struct {
	// Policy names the policy the fields describe, when they name one.
	Policy string
	// Remaining is how many quota units may still be sent before Reset.
	Remaining int64
	// Reset is the time from the response until the quota is restored;
	// 0 when the fields do not say.
	Reset time.Duration
	// Limit is the policy's quota, when RateLimit-Policy (or draft-06's
	// RateLimit-Limit) says; 0 otherwise.
	Limit int64
	// Window is the policy's time window, the period Limit applies to,
	// when RateLimit-Policy says; 0 otherwise.
	Window time.Duration
}

// maxDelay caps every delay read from a field: a larger one is clamped
// to it (the transport's own bound applies after).
const maxDelay = 100 * 365 * 24 * time.Hour

// seconds returns n seconds as a Duration, clamped to [0, maxDelay].
func seconds(n int64) time.Duration {
	if n <= 0 {
		return 0
	}
	if n >= int64(maxDelay/time.Second) {
		return maxDelay
	}
	return time.Duration(n) * time.Second
}

// ParseQuota reads h's rate-limit fields, in this order of preference: the
// IETF draft's RateLimit and RateLimit-Policy (draft-ietf-httpapi-
// ratelimit-headers-08 to -11), draft-06's RateLimit-Limit, -Remaining and
// -Reset, and X-RateLimit-Limit, -Remaining and -Reset (GitHub's form,
// whose Reset is a Unix time; a value below 10^9 is read as delay
// seconds, as some servers send it). now is when the response arrived.
// A malformed field is ignored, as the draft requires. ok is false when
// no form gives a Remaining.
//
// When RateLimit lists several policies, the most restrictive one is
// returned: the fewest remaining, then the longest reset.
func ParseQuota(h http.Header, now time.Time) (q Quota, ok bool) {
	if q, ok = ietfQuota(h); ok {
		return q, true
	}
	if q, ok = separateQuota(h, "Ratelimit-", false, now); ok {
		return q, true
	}
	return separateQuota(h, "X-Ratelimit-", true, now)
}

// field returns the field lines of name joined as one list, or "".
func field(h http.Header, name string) string {
	return strings.Join(h.Values(name), ", ")
}

func ietfQuota(h http.Header) (Quota, bool) {
	v := field(h, "Ratelimit")
	if v == "" {
		return Quota{}, false
	}
	items, err := parseSFList(v)
	if err != nil {
		return Quota{}, false
	}
	var best Quota
	found := false
	for i := range items {
		it := &items[i]
		if it.kind != sfString && it.kind != sfToken {
			continue
		}
		r, ok := it.intParam("r")
		if !ok || r < 0 {
			continue
		}
		q := Quota{Policy: it.str, Remaining: r}
		if t, ok := it.intParam("t"); ok && t >= 0 {
			q.Reset = seconds(t)
		}
		if !found || q.Remaining < best.Remaining || q.Remaining == best.Remaining && q.Reset > best.Reset {
			best, found = q, true
		}
	}
	if !found {
		return Quota{}, false
	}
	best.Limit, best.Window = policyOf(h, best.Policy)
	return best, true
}

// policyOf returns the quota and window RateLimit-Policy gives the policy
// named name (IETF form), or its only policy (draft-06's Integer form).
func policyOf(h http.Header, name string) (int64, time.Duration) {
	items, err := parseSFList(field(h, "Ratelimit-Policy"))
	if err != nil {
		return 0, 0
	}
	for i := range items {
		it := &items[i]
		var q int64
		var ok bool
		switch {
		case (it.kind == sfString || it.kind == sfToken) && it.str == name:
			q, ok = it.intParam("q")
		case it.kind == sfInteger && name == "" && len(items) == 1:
			q, ok = it.int, true
		}
		if !ok || q < 0 {
			continue
		}
		w, _ := it.intParam("w")
		return q, seconds(w)
	}
	return 0, 0
}

// sfInteger parses a field that is one SF Integer.
func sfIntegerField(h http.Header, name string) (int64, bool) {
	items, err := parseSFList(field(h, name))
	if err != nil || len(items) == 0 || items[0].kind != sfInteger {
		return 0, false
	}
	return items[0].int, true
}

// plainInteger parses a field that is one non-negative decimal integer,
// as the X-RateLimit fields are.
func plainInteger(h http.Header, name string) (int64, bool) {
	vs := h.Values(name)
	if len(vs) != 1 {
		return 0, false
	}
	v := strings.TrimSpace(vs[0])
	if v == "" || len(v) > 18 || strings.Trim(v, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

func separateQuota(h http.Header, prefix string, epoch bool, now time.Time) (Quota, bool) {
	parse := sfIntegerField
	if epoch {
		parse = plainInteger
	}
	r, ok := parse(h, prefix+"Remaining")
	if !ok || r < 0 {
		return Quota{}, false
	}
	q := Quota{Remaining: r}
	if t, ok := parse(h, prefix+"Reset"); ok && t >= 0 {
		if epoch && t >= 1_000_000_000 {
			q.Reset = max(time.Unix(t, 0).Sub(now), 0)
			q.Reset = min(q.Reset, maxDelay)
		} else {
			q.Reset = seconds(t)
		}
	}
	if l, ok := parse(h, prefix+"Limit"); ok && l >= 0 {
		q.Limit = l
	}
	if !epoch {
		if pq, w := policyOf(h, ""); pq > 0 && (q.Limit == 0 || pq == q.Limit) {
			q.Limit, q.Window = pq, w
		}
	}
	return q, true
}

// ParseRetryAfter reads a Retry-After value (RFC 9110 §10.2.3): delay
// seconds, or an HTTP-date, taken relative to now (a date in the past is
// 0). A value that is neither is an error wrapping [ErrMalformed].
func ParseRetryAfter(v string, now time.Time) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v != "" && strings.Trim(v, "0123456789") == "" {
		if len(v) > 18 {
			return maxDelay, nil
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		return seconds(n), nil
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, &fieldError{field: "Retry-After"}
	}
	return min(max(t.Sub(now), 0), maxDelay), nil
}
