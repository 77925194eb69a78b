package client

import (
	"net/http"
	"testing"
	"time"
)

func TestParseSFList(t *testing.T) {
	for _, tc := range []struct {
		in    string
		ok    bool
		names []string
	}{
		{`"default";r=50;t=30`, true, []string{"default"}},
		{`"permin";q=50;w=60,"perhr";q=1000;w=3600`, true, []string{"permin", "perhr"}},
		{`"hour";q=1000;w=3600, "day";q=5000;w=86400`, true, []string{"hour", "day"}},
		{`"peruser";q=100;w=60;pk=:cHsdsRa894==:`, true, []string{"peruser"}},
		{`"peruser";q=65535;qu="content-bytes";w=10;pk=:sdfjLJUOUH==:`, true, []string{"peruser"}},
		{`quota;q=100;w=1`, true, []string{"quota"}},
		{`100;w=60`, true, []string{""}},
		{`"a";x=1.5;y=?1;z=@1700000000;d=%"caf%c3%a9", (1 2 "x");k, "b"`, true, []string{"a", "", "b"}},
		{`"a";  r=1`, true, []string{"a"}},
		{``, true, nil},
		{`"a",`, false, nil},
		{`"a";R=1`, false, nil},
		{`"a";r=1234567890123456`, false, nil},
		{`"a";r=1.2345`, false, nil},
		{`"a`, false, nil},
		{`"a\x"`, false, nil},
		{`"a" "b"`, false, nil},
		{`:abc`, false, nil},
		{`(1 2`, false, nil},
		{`"é"`, false, nil},
		{`"a";r=-`, false, nil},
		{`"a";r=1.`, false, nil},
	} {
		items, err := parseSFList(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("%q: err %v, want ok=%v", tc.in, err, tc.ok)
			continue
		}
		if !tc.ok {
			continue
		}
		if len(items) != len(tc.names) {
			t.Errorf("%q: %d items, want %d", tc.in, len(items), len(tc.names))
			continue
		}
		for i, n := range tc.names {
			if items[i].str != n {
				t.Errorf("%q: item %d named %q, want %q", tc.in, i, items[i].str, n)
			}
		}
	}
}

var now = time.Unix(1_700_000_000, 0)

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func TestParseQuota(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.Header
		want Quota
		ok   bool
	}{
		{"ietf", hdr("RateLimit", `"default";r=42;t=35`, "RateLimit-Policy", `"default";q=100;w=60`),
			Quota{Policy: "default", Remaining: 42, Reset: 35 * time.Second, Limit: 100, Window: time.Minute}, true},
		{"ietf most restrictive of several", hdr("RateLimit", `"burst";r=5;t=1, "day";r=0;t=36000`, "RateLimit-Policy", `"burst";q=10;w=1, "day";q=5000;w=86400`),
			Quota{Policy: "day", Remaining: 0, Reset: 10 * time.Hour, Limit: 5000, Window: 24 * time.Hour}, true},
		{"ietf split over field lines", hdr("RateLimit", `"a";r=3`, "RateLimit", `"b";r=1;t=2`),
			Quota{Policy: "b", Remaining: 1, Reset: 2 * time.Second}, true},
		{"ietf token name, no t", hdr("RateLimit", `quota;r=7`), Quota{Policy: "quota", Remaining: 7}, true},
		{"ietf sluice's burst parameter is a comment", hdr("RateLimit", `"api";r=9;t=1`, "RateLimit-Policy", `"api";q=100;w=60;sluice-burst=200`),
			Quota{Policy: "api", Remaining: 9, Reset: time.Second, Limit: 100, Window: time.Minute}, true},
		{"ietf malformed is ignored, draft-06 used", hdr("RateLimit", `"a";r=`, "RateLimit-Remaining", "4", "RateLimit-Reset", "9"),
			Quota{Remaining: 4, Reset: 9 * time.Second}, true},
		{"ietf negative r ignored", hdr("RateLimit", `"a";r=-1`), Quota{}, false},
		{"draft-06", hdr("RateLimit-Limit", "100", "RateLimit-Remaining", "0", "RateLimit-Reset", "12", "RateLimit-Policy", "100;w=60"),
			Quota{Remaining: 0, Reset: 12 * time.Second, Limit: 100, Window: time.Minute}, true},
		{"draft-06 garbage reset", hdr("RateLimit-Remaining", "3", "RateLimit-Reset", "soon"), Quota{Remaining: 3}, true},
		{"x-ratelimit epoch", hdr("X-RateLimit-Limit", "60", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1700000030"),
			Quota{Remaining: 0, Reset: 30 * time.Second, Limit: 60}, true},
		{"x-ratelimit epoch in the past", hdr("X-RateLimit-Remaining", "1", "X-RateLimit-Reset", "1600000000"), Quota{Remaining: 1}, true},
		{"x-ratelimit delta", hdr("X-RateLimit-Remaining", "2", "X-RateLimit-Reset", "15"), Quota{Remaining: 2, Reset: 15 * time.Second}, true},
		{"x-ratelimit sent twice", hdr("X-RateLimit-Remaining", "2", "X-RateLimit-Remaining", "3"), Quota{}, false},
		{"x-ratelimit huge", hdr("X-RateLimit-Remaining", "999999999999999999999"), Quota{}, false},
		{"huge t clamped", hdr("RateLimit", `"a";r=0;t=999999999999999`), Quota{Policy: "a", Reset: maxDelay}, true},
		{"none", hdr("Content-Type", "text/plain"), Quota{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseQuota(tc.h, now)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("got %+v %v, want %+v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"5", 5 * time.Second, true},
		{" 12 ", 12 * time.Second, true},
		{"99999999999999999999999", maxDelay, true},
		{now.Add(90 * time.Second).UTC().Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).UTC().Format(http.TimeFormat), 0, true},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"", 0, false},
	} {
		got, err := ParseRetryAfter(tc.in, now)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%q: %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
