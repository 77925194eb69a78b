package client

import (
	"net/http"
	"testing"
)

func FuzzParseSFList(f *testing.F) {
	for _, s := range []string{
		`"default";r=50;t=30`, `"permin";q=50;w=60,"perhr";q=1000;w=3600`, `100;w=60`,
		`"a";x=1.5;y=?1;z=@1700000000;d=%"caf%c3%a9", (1 2 "x");k`, `"a\"b";r=1`, `:aGk=:`, `(`, `"a",`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		items, err := parseSFList(s)
		if err != nil {
			return
		}
		for _, it := range items {
			for _, p := range it.params {
				if p.key == "" {
					t.Fatalf("%q: a parameter without a key", s)
				}
				if p.kind == sfInteger && (p.int > 999_999_999_999_999 || p.int < -999_999_999_999_999) {
					t.Fatalf("%q: integer %d out of range", s, p.int)
				}
			}
		}
	})
}

func FuzzParseQuota(f *testing.F) {
	f.Add(`"default";r=42;t=35`, `"default";q=100;w=60`, "3", "12", "1700000030")
	f.Add(`"a";r=0;t=999999999999999`, `100;w=60`, "-1", "x", "99999999999999999999")
	f.Fuzz(func(t *testing.T, rl, policy, remaining, reset, xreset string) {
		h := http.Header{}
		h.Set("RateLimit", rl)
		h.Set("RateLimit-Policy", policy)
		h.Set("RateLimit-Remaining", remaining)
		h.Set("RateLimit-Reset", reset)
		h.Set("X-RateLimit-Remaining", remaining)
		h.Set("X-RateLimit-Reset", xreset)
		q, ok := ParseQuota(h, now)
		if !ok {
			return
		}
		if q.Remaining < 0 || q.Reset < 0 || q.Reset > maxDelay || q.Limit < 0 || q.Window < 0 || q.Window > maxDelay {
			t.Fatalf("out of range: %+v", q)
		}
	})
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "Wed, 21 Oct 2015 07:28:00 GMT", "99999999999999999999", "-3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseRetryAfter(s, now)
		if err == nil && (d < 0 || d > maxDelay) {
			t.Fatalf("%q: %v out of range", s, d)
		}
		if err != nil && d != 0 {
			t.Fatalf("%q: an error with a wait of %v", s, d)
		}
	})
}
