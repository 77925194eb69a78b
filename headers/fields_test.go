package headers_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
)

// TestAppendFields: AppendFields returns, appended to dst, the fields
// Write sets, with their names in canonical form; SetFields sets them, each
// value in a slice of its own.
func TestAppendFields(t *testing.T) {
	policies := []headers.Policy{
		{Name: "per-second", Result: allowed(sluice.PerSecond(10), 9, time.Second)},
		{Name: "per-day", Result: denied(sluice.Per(5000, 24*time.Hour), 0, 23*time.Hour, 11*time.Second)},
	}
	for _, mode := range []headers.Mode{headers.None, headers.IETF, headers.Draft06, headers.XRateLimit, headers.IETF | headers.Draft06 | headers.XRateLimit} {
		want := http.Header{}
		headers.Write(want, mode, policies, 1, testNow)
		first := headers.Field{Name: "X-Kept", Value: "1"}
		fields := headers.AppendFields([]headers.Field{first}, mode, policies, 1, testNow)
		if fields[0] != first || len(fields)-1 != len(want) {
			t.Fatalf("%v: AppendFields = %q, want %q after %q", mode, fields, want, first)
		}
		got := http.Header{}
		headers.SetFields(got, fields[1:])
		for _, f := range fields[1:] {
			if f.Name != http.CanonicalHeaderKey(f.Name) {
				t.Errorf("%v: field name %q is not canonical", mode, f.Name)
			}
			if w := want.Values(f.Name); len(w) != 1 || w[0] != f.Value {
				t.Errorf("%v: %s = %q, Write sets %q", mode, f.Name, f.Value, w)
			}
		}
		for name := range got {
			got.Add(name, "more") // never overwrites another field's value
		}
		for name, vs := range want {
			if g := got.Values(name); len(g) != 2 || g[0] != vs[0] {
				t.Errorf("%v: after Add, %s = %q, want %q then more", mode, name, g, vs[0])
			}
		}
	}
	if got := headers.AppendFields(nil, headers.IETF, policies, 2, testNow); len(got) != 0 {
		t.Errorf("binding out of range: %q, want none", got)
	}
}

// TestRetryAfterField: RetryAfter is the field SetRetryAfter sets.
func TestRetryAfterField(t *testing.T) {
	for _, d := range []time.Duration{0, 500 * time.Millisecond, 11500 * time.Millisecond, time.Hour} {
		h := http.Header{}
		headers.SetRetryAfter(h, d)
		if f := headers.RetryAfter(d); f.Name != "Retry-After" || f.Value != h.Get("Retry-After") {
			t.Errorf("RetryAfter(%v) = %q, SetRetryAfter sets %q", d, f, h.Get("Retry-After"))
		}
	}
}

// AppendFields allocates its values' string only, whatever the mode.
func TestAppendFieldsAllocs(t *testing.T) {
	policies := one("default", allowed(sluice.PerMinute(100), 42, 34*time.Second))
	dst := make([]headers.Field, 0, 8)
	for _, mode := range []headers.Mode{headers.IETF, headers.IETF | headers.Draft06 | headers.XRateLimit} {
		if n := testing.AllocsPerRun(100, func() { dst = headers.AppendFields(dst[:0], mode, policies, 0, testNow) }); n != 1 {
			t.Errorf("AppendFields(%v) allocates %v times, want 1", mode, n)
		}
	}
}
