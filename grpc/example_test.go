package sluicegrpc_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/sluicehq/sluice"
	sluicegrpc "github.com/sluicehq/sluice/grpc"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// A gRPC server limited per API key, sent as metadata: two calls a
// minute. The third call is refused with ResourceExhausted, the exact
// retry delay and the rule that refused it.
func Example() {
	store := memstore.New(memstore.Config{})
	defer store.Close(context.Background())
	set := rules.MustNew(rules.Rule{Name: "per-key", Key: keyfunc.APIKey("x-api-key"), Limit: sluice.PerMinute(2)})
	l, err := sluicegrpc.New(store, set)
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(l.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(l.StreamServerInterceptor()),
	)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis := bufconn.Listen(1 << 16)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	cc, err := grpc.NewClient("passthrough:///example",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cc.Close()
	c := healthpb.NewHealthClient(cc)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-api-key", "k-123")
	for range 3 {
		var header metadata.MD
		_, err := c.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header))
		if err != nil {
			delay, _ := sluicegrpc.RetryDelay(err)
			fmt.Println(status.Code(err), "retry in", delay.Round(time.Second), "rule", sluicegrpc.Violations(err)[0].GetQuotaId())
			continue
		}
		fmt.Println("OK", header.Get("ratelimit"))
	}
	// Output:
	// OK ["per-key";r=1;t=30]
	// OK ["per-key";r=0;t=60]
	// ResourceExhausted retry in 30s rule per-key
}

// A client that waits out refusals: the second call is refused for a
// minute, waited for, and sent again. The store and the interceptor share
// a fake clock whose sleeps move it, so the example takes no time.
func ExampleUnaryClientInterceptor() {
	clk := storetest.NewClock(time.Now())
	store := memstore.New(memstore.Config{Clock: clk})
	defer store.Close(context.Background())
	set := rules.MustNew(rules.Rule{Name: "per-method", Key: keyfunc.Endpoint(), Limit: sluice.PerMinute(1)})
	l, err := sluicegrpc.New(store, set)
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(l.UnaryServerInterceptor()))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis := bufconn.Listen(1 << 16)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	sleep := func(ctx context.Context, d time.Duration) error {
		fmt.Println("waiting", d)
		clk.Advance(d)
		return nil
	}
	retry, err := sluicegrpc.UnaryClientInterceptor(
		sluicegrpc.WithMaxWait(5*time.Minute), sluicegrpc.WithJitter(0), sluicegrpc.WithTime(clk.Now, sleep))
	if err != nil {
		fmt.Println(err)
		return
	}
	cc, err := grpc.NewClient("passthrough:///example",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(retry))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cc.Close()
	c := healthpb.NewHealthClient(cc)
	for i := range 2 {
		_, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{})
		fmt.Println("call", i+1, status.Code(err))
	}
	// Output:
	// call 1 OK
	// waiting 1m0s
	// call 2 OK
}

// The request a call is presented as: every key of the keyfunc package
// reads it, so rules written for HTTP key gRPC calls unchanged.
func ExampleNewRequest() {
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-api-key", "k-123"))
	ctx = peer.NewContext(ctx, &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP("2001:db8:1:2::7"), Port: 51234}})
	r := sluicegrpc.NewRequest(ctx, "/shop.Orders/Create")

	for _, k := range []keyfunc.Key{keyfunc.ClientIP(), keyfunc.APIKey("X-API-Key"), keyfunc.Endpoint()} {
		id, err := k.Identity(r)
		fmt.Printf("%s: %q %v\n", k.Kind(), id, err)
	}
	fmt.Println(r.Method == http.MethodPost, r.URL.Path)
	// Output:
	// ip: "2001:db8:1:2::" <nil>
	// api_key: "k-123" <nil>
	// endpoint: "POST /shop.Orders/Create" <nil>
	// true /shop.Orders/Create
}
