package envoy_test

import (
	"context"
	"github.com/sluicehq/sluice/decide"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/sluicehq/sluice/envoy"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// serve runs svc on a gRPC server on a loopback port and returns Envoy's
// generated client for it.
func serve(tb testing.TB, svc *envoy.Service) rlsv3.RateLimitServiceClient {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	gs := grpc.NewServer()
	svc.Register(gs)
	done := make(chan struct{})
	go func() { _ = gs.Serve(ln); close(done) }()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		conn.Close()
		gs.Stop()
		<-done
	})
	return rlsv3.NewRateLimitServiceClient(conn)
}

// redisService returns the client of a service over a Redis store of the
// test's own, deciding mapping.
func redisService(tb testing.TB, mapping string, opts ...envoy.Option) rlsv3.RateLimitServiceClient {
	tb.Helper()
	svc, err := envoy.New(redisStore(tb), mustMapping(tb, mapping), opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return serve(tb, svc)
}

func call(tb testing.TB, c rlsv3.RateLimitServiceClient, req *rlsv3.RateLimitRequest) *rlsv3.RateLimitResponse {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.ShouldRateLimit(ctx, req)
	if err != nil {
		tb.Fatalf("ShouldRateLimit: %v", err)
	}
	return resp
}

const redisMapping = `
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 2, name: per-ip}
  - key: window
    rate_limit: {unit: minute, requests_per_unit: 1, algorithm: fixed_window}
  - key: site
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: tenant
    rate_limit: {unit: hour, requests_per_unit: 25, algorithm: sliding_window}
---
domain: strict
unmatched: over_limit
descriptors:
  - key: tenant
    rate_limit: {unit: minute, requests_per_unit: 3}
`

// TestRedisOverLimitReset: on Redis, through Envoy's client, the request
// over a token bucket's limit is OVER_LIMIT with the time until a token is
// back (on the Redis server's clock) as its reset and Retry-After, and one
// over a fixed window's with the time until the window ends.
func TestRedisOverLimitReset(t *testing.T) {
	c := redisService(t, redisMapping)
	req := request("edge", desc("remote_address", "192.0.2.1"))
	for i := range 2 {
		if resp := call(t, c, req); resp.OverallCode != ok || resp.Statuses[0].LimitRemaining != uint32(1-i) {
			t.Fatalf("request %d: %v remaining %d", i+1, codesOf(resp), resp.Statuses[0].LimitRemaining)
		}
	}
	resp := call(t, c, req)
	if !sameCodes(codesOf(resp), over, over) {
		t.Fatalf("third request: %v", codesOf(resp))
	}
	// 2 a minute: a token every 30 s, the first taken a moment ago.
	reset := resp.Statuses[0].DurationUntilReset.AsDuration()
	if reset <= 25*time.Second || reset > 30*time.Second {
		t.Errorf("DurationUntilReset = %v, want just under 30s", reset)
	}
	if got, want := header(resp, "retry-after"), strconv.Itoa(int((reset+time.Second-1)/time.Second)); got != want {
		t.Errorf("retry-after = %q, want %q (the reset, rounded up)", got, want)
	}
	if got := header(resp, "ratelimit"); !strings.HasPrefix(got, `"per-ip";r=0;t=`) {
		t.Errorf("ratelimit = %q", got)
	}

	w := request("edge", desc("window", "w"))
	call(t, c, w)
	before := time.Now()
	resp = call(t, c, w)
	if resp.OverallCode != over {
		t.Fatalf("second request in a window of 1: %v", codesOf(resp))
	}
	// The window ends at the next whole minute (Redis runs on this machine:
	// its clock is ours, give or take a second).
	end := before.Truncate(time.Minute).Add(time.Minute).Sub(before)
	if got := resp.Statuses[0].DurationUntilReset.AsDuration(); got < end-time.Second || got > end+time.Second {
		t.Errorf("fixed window DurationUntilReset = %v, want about %v (the end of the minute)", got, end)
	}
}

// TestRedisRefusedRequestConsumesNothing: on Redis, a request that one
// descriptor refuses consumes nothing in the others, which envoyproxy's
// service would count anyway.
func TestRedisRefusedRequestConsumesNothing(t *testing.T) {
	c := redisService(t, redisMapping)
	both := request("edge", desc("site", "shop"), desc("tenant", "acme"), desc("remote_address", "192.0.2.9"))
	for range 2 {
		if resp := call(t, c, both); resp.OverallCode != ok {
			t.Fatalf("within the limits: %v", codesOf(resp))
		}
	}
	for range 20 {
		if resp := call(t, c, both); !sameCodes(codesOf(resp), over, ok, ok, over) {
			t.Fatalf("per-ip exhausted: %v", codesOf(resp))
		}
	}
	resp := call(t, c, request("edge", desc("site", "shop"), desc("tenant", "acme")))
	if resp.OverallCode != ok || resp.Statuses[0].LimitRemaining != 7 || resp.Statuses[1].LimitRemaining != 22 {
		t.Errorf("after 20 refused requests: %v, site remaining %d (want 7), tenant remaining %d (want 22)",
			codesOf(resp), resp.Statuses[0].LimitRemaining, resp.Statuses[1].LimitRemaining)
	}
}

// TestRedisConcurrentRequestsExact: requests racing for one bucket from
// many goroutines admit exactly the limit.
func TestRedisConcurrentRequestsExact(t *testing.T) {
	c := redisService(t, redisMapping)
	var mu sync.Mutex
	admitted := 0
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			resp := call(t, c, request("edge", desc("site", "race")))
			if resp.OverallCode == ok {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if admitted != 10 {
		t.Errorf("%d of 40 concurrent requests admitted, want exactly 10", admitted)
	}
}

// TestRedisMalformedRequest: over gRPC, a malformed request is
// InvalidArgument with a message naming what is wrong, and the service
// goes on serving.
func TestRedisMalformedRequest(t *testing.T) {
	c := redisService(t, redisMapping)
	for _, tt := range []struct {
		req  *rlsv3.RateLimitRequest
		want string
	}{
		{request("", desc("site", "s")), "envoy: the request has no domain"},
		{request("edge"), "envoy: the request has no descriptors"},
		{request("edge", desc("site", "s"), desc()), "envoy: descriptors[1]: no entries"},
		{request("edge", desc("site", "s", "", "v")), "envoy: descriptors[0]: entries[1]: empty key"},
	} {
		_, err := c.ShouldRateLimit(context.Background(), tt.req)
		if st := status.Convert(err); st.Code() != codes.InvalidArgument || st.Message() != tt.want {
			t.Errorf("got %v, want InvalidArgument %q", err, tt.want)
		}
	}
	if resp := call(t, c, request("edge", desc("site", "s"))); resp.OverallCode != ok {
		t.Errorf("after malformed requests: %v", codesOf(resp))
	}
}

// TestRedisUnknownDescriptor: a descriptor no limit applies to is answered
// per its mapping's unmatched field (ok by default, over_limit where set),
// consuming nothing; an unknown domain is OK; nothing panics.
func TestRedisUnknownDescriptor(t *testing.T) {
	c := redisService(t, redisMapping)
	if resp := call(t, c, request("edge", desc("unheard_of", "x"), desc("site", "u"))); !sameCodes(codesOf(resp), ok, ok, ok) || resp.Statuses[0].CurrentLimit != nil {
		t.Errorf("unknown key, default: %v %v", codesOf(resp), resp.Statuses[0])
	}
	if resp := call(t, c, request("strict", desc("tenant", "t"), desc("unheard_of", "x"))); !sameCodes(codesOf(resp), over, ok, over) {
		t.Errorf("unknown key, unmatched: over_limit: %v", codesOf(resp))
	}
	if resp := call(t, c, request("strict", desc("tenant", "t"))); resp.Statuses[0].LimitRemaining != 2 {
		t.Errorf("the refused request consumed: remaining %d, want 2", resp.Statuses[0].LimitRemaining)
	}
	if resp := call(t, c, request("nowhere", desc("k", "v"))); resp.OverallCode != ok {
		t.Errorf("unknown domain: %v", codesOf(resp))
	}
}

// TestRedisStoreDown: with the Redis server killed, a local limit decides
// in process, starting from what the store last said (1 of 2 left), and a
// closed one answers Unavailable.
func TestRedisStoreDown(t *testing.T) {
	store, srv := redisStoreOn(t)
	m := mustMapping(t, `
domain: d
descriptors:
  - key: local
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: closed
    rate_limit: {unit: minute, requests_per_unit: 2, on_fail: closed}
`)
	svc, err := envoy.New(store, m, decide.WithInstances(1), decide.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	c := serve(t, svc)
	call(t, c, request("d", desc("local", "x")))
	srv.Kill()
	for i, want := range []rlsv3.RateLimitResponse_Code{ok, over} {
		if resp := call(t, c, request("d", desc("local", "x"))); resp.OverallCode != want {
			t.Errorf("local request %d with the store gone: %v, want %v", i+1, codesOf(resp), want)
		}
	}
	_, err = c.ShouldRateLimit(context.Background(), request("d", desc("closed", "x")))
	if status.Code(err) != codes.Unavailable {
		t.Errorf("closed with the store gone: %v, want Unavailable", err)
	}
}
