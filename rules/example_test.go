package rules_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
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
