package headers_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
)

func benchWrite(b *testing.B, mode headers.Mode, policies []headers.Policy) {
	h := http.Header{}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		headers.Write(h, mode, policies, len(policies)-1, now)
	}
}

func BenchmarkWriteIETF(b *testing.B) {
	benchWrite(b, headers.IETF, one("default", allowed(sluice.PerMinute(100), 42, 34*time.Second)))
}

func BenchmarkWriteIETFThreePolicies(b *testing.B) {
	benchWrite(b, headers.IETF, []headers.Policy{
		{Name: "per-second", Result: allowed(sluice.Per(10, 100*time.Millisecond).WithBurst(20), 19, 10*time.Millisecond)},
		{Name: "per-hour", Result: allowed(sluice.PerHour(1000), 900, 20*time.Minute)},
		{Name: "per-day", Result: denied(sluice.Per(5000, 24*time.Hour), 0, 23*time.Hour, 11*time.Second)},
	})
}

func BenchmarkWriteAllModes(b *testing.B) {
	benchWrite(b, headers.IETF|headers.Draft06|headers.XRateLimit, one("default", allowed(sluice.PerMinute(100), 42, 34*time.Second)))
}

func BenchmarkSetRetryAfter(b *testing.B) {
	h := http.Header{}
	b.ReportAllocs()
	for b.Loop() {
		headers.SetRetryAfter(h, 11500*time.Millisecond)
	}
}

// Write allocates its values' string and one slice for them, whatever the
// mode and the number of policies.
func TestWriteAllocs(t *testing.T) {
	policies := []headers.Policy{
		{Name: "per-second", Result: allowed(sluice.Per(10, 100*time.Millisecond).WithBurst(20), 19, 10*time.Millisecond)},
		{Name: "per-day", Result: denied(sluice.Per(5000, 24*time.Hour), 0, 23*time.Hour, 11*time.Second)},
	}
	h := http.Header{}
	now := time.Now()
	for _, mode := range []headers.Mode{headers.IETF, headers.Draft06, headers.XRateLimit, headers.IETF | headers.Draft06 | headers.XRateLimit} {
		if n := testing.AllocsPerRun(100, func() { headers.Write(h, mode, policies, 1, now) }); n > 2 {
			t.Errorf("Write(%v) allocates %v times, want at most 2", mode, n)
		}
	}
}
