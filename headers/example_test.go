package headers_test

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/headers"
)

// printHeader prints h's fields sorted by name.
func printHeader(h http.Header) {
	for _, k := range slices.Sorted(maps.Keys(h)) {
		fmt.Printf("%s: %s\n", k, h.Get(k))
	}
}

// An allowed request under a single rule, in the default mode.
func ExampleWrite() {
	h := http.Header{}
	policies := []headers.Policy{{
		Name: "default",
		Result: sluice.Result{
			Allowed:    true,
			Limit:      sluice.PerMinute(100),
			Remaining:  42,
			ResetAfter: 34*time.Second + 800*time.Millisecond,
		},
	}}
	headers.Write(h, headers.Default, policies, 0, time.Now())
	printHeader(h)
	// Output:
	// Ratelimit: "default";r=42;t=35
	// Ratelimit-Policy: "default";q=100;w=60
}

// A denied request under two rules, the second binding, in every mode at
// once. The 429 also carries Retry-After, equal to t.
func ExampleWrite_denied() {
	now := time.Unix(1_700_000_000, 250_000_000)
	h := http.Header{}
	policies := []headers.Policy{
		{
			Name: "per-second",
			Result: sluice.Result{
				Allowed:    true,
				Limit:      sluice.Per(10, 100*time.Millisecond).WithBurst(20),
				Remaining:  19,
				ResetAfter: 10 * time.Millisecond,
			},
		},
		{
			Name: "daily",
			Result: sluice.Result{
				Limit:      sluice.Per(5000, 24*time.Hour),
				ResetAfter: 23 * time.Hour,
				RetryAfter: 11*time.Second + 500*time.Millisecond,
			},
		},
	}
	mode := headers.IETF | headers.Draft06 | headers.XRateLimit
	headers.Write(h, mode, policies, 1, now)
	headers.SetRetryAfter(h, policies[1].Result.RetryAfter)
	printHeader(h)
	// Output:
	// Ratelimit: "daily";r=0;t=12
	// Ratelimit-Limit: 5000
	// Ratelimit-Policy: "per-second";q=100;w=1;sluice-burst=20, "daily";q=5000;w=86400
	// Ratelimit-Remaining: 0
	// Ratelimit-Reset: 12
	// Retry-After: 12
	// X-Ratelimit-Limit: 5000
	// X-Ratelimit-Remaining: 0
	// X-Ratelimit-Reset: 1700000012
}

// The draft-06 fields alone, for clients written against that revision.
func ExampleWrite_draft06() {
	h := http.Header{}
	policies := []headers.Policy{{
		Name: "default",
		Result: sluice.Result{
			Allowed:    true,
			Limit:      sluice.PerMinute(100),
			Remaining:  99,
			ResetAfter: 600 * time.Millisecond,
		},
	}}
	headers.Write(h, headers.Draft06, policies, 0, time.Now())
	printHeader(h)
	// Output:
	// Ratelimit-Limit: 100
	// Ratelimit-Policy: 100;w=60
	// Ratelimit-Remaining: 99
	// Ratelimit-Reset: 1
}

func ExampleQuota() {
	for _, l := range []sluice.Limit{
		sluice.PerMinute(100),
		sluice.Per(10, 100*time.Millisecond),
		sluice.Per(3, 1500*time.Millisecond),
		sluice.Per(1, 7*time.Millisecond),
	} {
		q, w := headers.Quota(l)
		fmt.Printf("%v: q=%d;w=%d\n", l, q, w)
	}
	// Output:
	// 100/1m: q=100;w=60
	// 10/100ms: q=100;w=1
	// 3/1.5s: q=6;w=3
	// 1/7ms: q=142;w=1
}

func ExampleParseMode() {
	m, err := headers.ParseMode("ietf, x-ratelimit")
	fmt.Println(m, err)
	// Output: ietf|x-ratelimit <nil>
}
