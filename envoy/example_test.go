package envoy_test

import (
	"context"
	"fmt"
	"log"
	"net"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/sluicehq/sluice/envoy"
	"github.com/sluicehq/sluice/store/memstore"
	"google.golang.org/grpc"
)

// A mapping in envoyproxy/ratelimit's format, decided on the in-memory
// store: two descriptors of one request are decided together, and the
// request over its per-address limit consumes nothing of the site's.
func Example() {
	mapping, err := envoy.ParseMapping("ratelimit.yaml", []byte(`
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 2, name: per-ip}
  - key: site
    rate_limit: {unit: minute, requests_per_unit: 100, name: site}
`))
	if err != nil {
		log.Fatal(err)
	}
	store := memstore.New(memstore.Config{})
	defer store.Close(context.Background())
	svc, err := envoy.New(store, mapping)
	if err != nil {
		log.Fatal(err)
	}
	entry := func(k, v string) *ratelimitv3.RateLimitDescriptor {
		return &ratelimitv3.RateLimitDescriptor{Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: k, Value: v}}}
	}
	req := &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{
		entry("remote_address", "192.0.2.7"), entry("site", "shop"),
	}}
	for range 3 {
		resp, err := svc.ShouldRateLimit(context.Background(), req)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(resp.OverallCode, resp.Statuses[0].Code, resp.Statuses[1].Code, "site remaining:", resp.Statuses[1].LimitRemaining)
	}
	// Output:
	// OK OK OK site remaining: 99
	// OK OK OK site remaining: 98
	// OVER_LIMIT OVER_LIMIT OK site remaining: 98
}

// A mapping with a mistake is refused with the file, the line and the
// field.
func ExampleParseMapping() {
	_, err := envoy.ParseMapping("ratelimit.yaml", []byte(`domain: edge
descriptors:
  - key: remote_address
    rate_limit:
      unit: minutes
      requests_per_unit: 60
`))
	fmt.Println(err)
	// Output:
	// envoy: ratelimit.yaml:5: domain "edge": descriptors[0].rate_limit.unit: "minutes" is not a unit (second, minute, hour, day, week, month, year)
}

// Serving the rate limit service to Envoy over gRPC.
func ExampleService_Register() {
	mapping, err := envoy.LoadMapping([]string{"testdata/doc.yaml"})
	if err != nil {
		log.Fatal(err)
	}
	store := memstore.New(memstore.Config{})
	defer store.Close(context.Background())
	svc, err := envoy.New(store, mapping)
	if err != nil {
		log.Fatal(err)
	}
	gs := grpc.NewServer()
	svc.Register(gs)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go gs.Serve(ln)
	defer gs.Stop()
	fmt.Println("serving", mapping.Domains())
	// Output:
	// serving [api]
}
