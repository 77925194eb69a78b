package compat_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
)

// FuzzWrite writes two policies from arbitrary inputs in every mode and
// checks the output with an independent Structured Fields parser.
func FuzzWrite(f *testing.F) {
	f.Add("default", "hour", int64(100), int64(time.Minute), int64(0), int64(42), int64(34*time.Second), int64(0), true, false, false, int64(1_700_000_000))
	f.Add(`q"uo\te`, "caf\u00e9\xff", int64(10), int64(100*time.Millisecond), int64(20), int64(-1), int64(time.Second), int64(1500*time.Millisecond), false, false, true, int64(0))
	f.Add(strings.Repeat("long", 40), "", int64(3), int64(1500*time.Millisecond), int64(1), int64(0), int64(0), int64(0), false, true, false, int64(-5))
	f.Add("\x00\t\r\n", "日本", int64(-1<<63), int64(-1), int64(-1), int64(1<<62), int64(1<<63-1), int64(1<<63-1), false, false, true, int64(1<<40))
	f.Add("", "p", int64(1<<63-1), int64(1), int64(1<<63-1), int64(1<<63-1), int64(-1<<63), int64(-1<<63), false, false, false, int64(1<<62))
	f.Fuzz(func(t *testing.T, name0, name1 string, rate, period, burst, remaining, reset, retry int64, allowed, unsat, bindSecond bool, nowSec int64) {
		// A second policy derived from the first, so both vary.
		res0 := sluice.Result{
			Allowed:       allowed,
			Limit:         sluice.Limit{Rate: rate, Period: time.Duration(period), Burst: burst},
			Remaining:     remaining,
			ResetAfter:    time.Duration(reset),
			RetryAfter:    time.Duration(retry),
			Unsatisfiable: unsat,
		}
		res1 := sluice.Result{
			Allowed:    !allowed,
			Limit:      sluice.Limit{Rate: burst, Period: time.Duration(rate), Burst: period},
			Remaining:  reset,
			ResetAfter: time.Duration(retry),
			RetryAfter: time.Duration(remaining),
		}
		policies := []headers.Policy{{Name: name0, Result: res0}, {Name: name1, Result: res1}}
		binding := 0
		if bindSecond {
			binding = 1
		}
		// Keep now within the years Go formats as Unix seconds.
		now := time.Unix(nowSec%(1<<40), 0).Add(time.Duration(remaining % int64(time.Second)))

		h := http.Header{}
		headers.Write(h, headers.IETF|headers.XRateLimit, policies, binding, now)
		bind := policies[binding].Result
		if !bind.Allowed && !bind.Unsatisfiable {
			// As the middleware does for a refused request that can pass later.
			headers.SetRetryAfter(h, bind.RetryAfter)
		}

		checkPolicyList(t, h, policies)
		tSecs := checkRateLimit(t, h, policies[binding])
		if !bind.Allowed && !bind.Unsatisfiable {
			ra := mustInt(t, "Retry-After", h.Get("Retry-After"))
			if ra < 1 || tSecs < 1 || ra < tSecs {
				t.Errorf("Retry-After %d, t %d", ra, tSecs)
			}
		}
		for _, k := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
			mustInt(t, k, h.Get(k))
		}

		h = http.Header{}
		headers.Write(h, headers.Draft06, policies, binding, now)
		for _, k := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
			mustInt(t, k, h.Get(k))
		}
		if got, want := h.Get("RateLimit-Reset"), strconv.FormatInt(tSecs, 10); got != want {
			t.Errorf("RateLimit-Reset %s, t %s", got, want)
		}
		l, err := httpsfv.UnmarshalList(h.Values("RateLimit-Policy"))
		if err != nil || len(l) != len(policies) {
			t.Fatalf("draft-06 RateLimit-Policy %q: %v, %d members", h.Get("RateLimit-Policy"), err, len(l))
		}
		for i, m := range l {
			item, ok := m.(httpsfv.Item)
			if !ok {
				t.Fatalf("draft-06 member %d is %T", i, m)
			}
			checkQuota(t, item.Value, item.Params, policies[i].Result.Limit)
		}
	})
}

// maxInteger is the largest Integer a Structured Field carries (RFC 9651
// §3.3.1: at most 15 digits).
const maxInteger = 999_999_999_999_999

// checkPolicyList parses RateLimit-Policy and checks every member.
func checkPolicyList(t *testing.T, h http.Header, policies []headers.Policy) {
	t.Helper()
	vals := h.Values("RateLimit-Policy")
	l, err := httpsfv.UnmarshalList(vals)
	if err != nil {
		t.Fatalf("RateLimit-Policy %q: %v", vals, err)
	}
	checkCanonical(t, l, vals)
	if len(l) != len(policies) {
		t.Fatalf("RateLimit-Policy has %d members, want %d", len(l), len(policies))
	}
	for i, m := range l {
		item, ok := m.(httpsfv.Item)
		if !ok {
			t.Fatalf("member %d is %T", i, m)
		}
		if want := headers.SanitizeName(policies[i].Name); item.Value != want {
			t.Errorf("member %d name %q, want %q", i, item.Value, want)
		}
		q, _ := item.Params.Get("q")
		checkQuota(t, q, item.Params, policies[i].Result.Limit)
	}
}

// checkQuota checks a policy's q (given), w and burst parameters.
func checkQuota(t *testing.T, q any, params *httpsfv.Params, l sluice.Limit) {
	t.Helper()
	wantQ, wantW := headers.Quota(l)
	w, _ := params.Get("w")
	if q != wantQ || w != wantW {
		t.Errorf("q=%#v;w=%#v, want Integers %d and %d", q, w, wantQ, wantW)
	}
	if wantQ < 0 || wantW < 1 || wantQ > maxInteger || wantW > maxInteger {
		t.Errorf("Quota(%+v) = q=%d;w=%d out of range", l, wantQ, wantW)
	}
	b, ok := params.Get("sluice-burst")
	if ok != (l.Capacity() != l.Rate) {
		t.Errorf("sluice-burst present=%v for %+v", ok, l)
	}
	if ok {
		if v, isInt := b.(int64); !isInt || v < 0 {
			t.Errorf("sluice-burst=%#v", b)
		}
	}
}

// checkRateLimit parses RateLimit, checks it and returns t (0 if absent).
func checkRateLimit(t *testing.T, h http.Header, p headers.Policy) int64 {
	t.Helper()
	vals := h.Values("RateLimit")
	l, err := httpsfv.UnmarshalList(vals)
	if err != nil {
		t.Fatalf("RateLimit %q: %v", vals, err)
	}
	checkCanonical(t, l, vals)
	if len(l) != 1 {
		t.Fatalf("RateLimit has %d members", len(l))
	}
	item, ok := l[0].(httpsfv.Item)
	if !ok {
		t.Fatalf("RateLimit member is %T", l[0])
	}
	if want := headers.SanitizeName(p.Name); item.Value != want {
		t.Errorf("RateLimit name %q, want %q", item.Value, want)
	}
	r, _ := item.Params.Get("r")
	if want := min(max(p.Result.Remaining, 0), maxInteger); r != want {
		t.Errorf("r=%#v, want %d", r, want)
	}
	tv, ok := item.Params.Get("t")
	if !ok {
		if !p.Result.Allowed && !p.Result.Unsatisfiable {
			t.Error("no t on a denied result")
		}
		return 0
	}
	secs, isInt := tv.(int64)
	if !isInt || secs < 1 || secs > maxInteger {
		t.Errorf("t=%#v", tv)
	}
	return secs
}

// checkCanonical fails unless vals is the canonical serialisation of l.
func checkCanonical(t *testing.T, l httpsfv.List, vals []string) {
	t.Helper()
	s, err := httpsfv.Marshal(l)
	if err != nil || len(vals) != 1 || s != vals[0] {
		t.Errorf("%q is not canonical: %q, %v", vals, s, err)
	}
}

func mustInt(t *testing.T, field, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > maxInteger || strconv.FormatInt(v, 10) != s {
		t.Errorf("%s: %q is not an Integer in range", field, s)
	}
	return v
}
