package rules_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// New checks every rule once, when the set is built; the error names the
// rule and the field.
func ExampleNew() {
	perIP := rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(100)}

	set, err := rules.New(perIP)
	fmt.Println(set.Len(), err)

	for _, bad := range []rules.Rule{
		{Name: "upload", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(3), Cost: 5},
		{Name: "search", Key: keyfunc.ClientIP(), Limit: sluice.Per(10, 0)},
		{Name: "per-user", Limit: sluice.PerMinute(10)},
		perIP,
	} {
		_, err := rules.New(perIP, bad)
		fmt.Println(err)
	}
	// Output:
	// 1 <nil>
	// rules: invalid rule "upload": cost: 5 exceeds the capacity 3: no request could ever pass
	// rules: invalid rule "search": limit: sluice: invalid limit: period 0s: must be at least 1ms
	// rules: invalid rule "per-user": key: no key function
	// rules: invalid rule "per-ip": name: used by two rules
}

// Resolve picks the rules a request matches and builds their hits. The
// bucket key encodes the rule's name, its key kind and the identity.
func ExampleSet_Resolve() {
	apiKey := keyfunc.APIKey("X-API-Key")
	set := rules.MustNew(
		rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(100)},
		rules.Rule{
			Name: "per-api-key", Key: apiKey, Limit: sluice.PerMinute(20),
			Match: func(r *http.Request) bool { return r.Header.Get("X-API-Key") != "" },
		},
		rules.Rule{Name: "global", Key: keyfunc.Global(), Limit: sluice.PerSecond(1000), Shadow: true},
	)

	var m rules.Matched // reusable across requests
	show := func(r *http.Request) {
		if err := set.Resolve(r, &m); err != nil {
			fmt.Println("error:", err)
			return
		}
		for i, rule := range m.Rules {
			h := m.Hits[i]
			fmt.Printf("%-11s limit=%-7v shadow=%-5v key=%q\n", rule.Name, h.Limit, h.Shadow, h.Key)
		}
		fmt.Println("--")
	}

	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.1:1234"
	show(r)

	r.Header.Set("X-API-Key", "k-123")
	show(r)

	r.RemoteAddr = "" // no peer address: the per-ip rule cannot key it
	show(r)
	// Output:
	// per-ip      limit=100/1m  shadow=false key="6:per-ip2:ip192.0.2.1"
	// global      limit=1000/1s shadow=true  key="6:global6:globalglobal"
	// --
	// per-ip      limit=100/1m  shadow=false key="6:per-ip2:ip192.0.2.1"
	// per-api-key limit=20/1m   shadow=false key="11:per-api-key7:api_keyk-123"
	// global      limit=1000/1s shadow=true  key="6:global6:globalglobal"
	// --
	// error: rules: rule "per-ip": keyfunc: no key: empty RemoteAddr (a Unix-socket peer or a hand-made request): no client IP
}

// BindingResult picks the rule the rate-limit headers describe: for an
// admitted request the one closest to its limit, for a refused one the rule
// that refused it for longest, whose RetryAfter is the wait for them all.
func ExampleBindingResult() {
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock})
	defer store.Close(context.Background())

	set := rules.MustNew(
		rules.Rule{Name: "per-second", Key: keyfunc.ClientIP(), Limit: sluice.PerSecond(5)},
		rules.Rule{Name: "per-minute", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(8)},
	)
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.1:1234"

	var m rules.Matched
	results := make([]sluice.Result, set.Len())
	for i := 1; i <= 10; i++ {
		if err := set.Resolve(r, &m); err != nil {
			panic(err)
		}
		if err := store.Take(context.Background(), m.Hits, results); err != nil {
			panic(err)
		}
		admitted := sluice.Admitted(m.Hits, results)
		b := rules.BindingResult(results, admitted) // both rules are exposed
		fmt.Printf("request %2d: admitted=%-5v binding=%s remaining=%d", i, admitted, m.Rules[b].Name, results[b].Remaining)
		if !admitted {
			fmt.Printf(" retry after %v", results[b].RetryAfter)
		}
		fmt.Println()
		clock.Advance(100 * time.Millisecond)
	}
	// Output:
	// request  1: admitted=true  binding=per-second remaining=4
	// request  2: admitted=true  binding=per-second remaining=3
	// request  3: admitted=true  binding=per-second remaining=3
	// request  4: admitted=true  binding=per-second remaining=2
	// request  5: admitted=true  binding=per-second remaining=2
	// request  6: admitted=true  binding=per-second remaining=1
	// request  7: admitted=true  binding=per-minute remaining=1
	// request  8: admitted=true  binding=per-minute remaining=0
	// request  9: admitted=false binding=per-minute remaining=0 retry after 6.7s
	// request 10: admitted=false binding=per-minute remaining=0 retry after 6.6s
}
