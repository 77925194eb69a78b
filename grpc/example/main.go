// Command example serves gRPC's health service on a loopback port, limited
// to 2 calls a second per client address, and calls it: without the client
// interceptor the third call is refused with the exact retry delay and the
// rule; with it, the third call waits that delay out and succeeds.
package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	sluicegrpc "github.com/sluicehq/sluice/grpc"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func main() {
	store := memstore.New(memstore.Config{})
	defer store.Close(context.Background())
	set := rules.MustNew(rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: sluice.PerSecond(2)})
	limiter, err := sluicegrpc.New(store, set)
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(limiter.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(limiter.StreamServerInterceptor()),
	)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	fmt.Println("without the client interceptor:")
	calls(dial(lis.Addr().String()))

	time.Sleep(time.Second) // the bucket refills
	retry, err := sluicegrpc.UnaryClientInterceptor()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("with it:")
	calls(dial(lis.Addr().String(), grpc.WithUnaryInterceptor(retry)))
}

func dial(addr string, opts ...grpc.DialOption) healthpb.HealthClient {
	opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		log.Fatal(err)
	}
	return healthpb.NewHealthClient(cc)
}

// calls makes three calls and prints how each ended.
func calls(c healthpb.HealthClient) {
	for i := 1; i <= 3; i++ {
		start := time.Now()
		var header metadata.MD
		_, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{}, grpc.Header(&header))
		took := time.Since(start).Round(100 * time.Millisecond)
		if err != nil {
			delay, _ := sluicegrpc.RetryDelay(err)
			fmt.Printf("  call %d: %v, retry in %v, rule %s\n", i, status.Code(err), delay.Round(time.Millisecond),
				sluicegrpc.Violations(err)[0].GetQuotaId())
			continue
		}
		fmt.Printf("  call %d: OK after %v, ratelimit: %s\n", i, took, strings.Join(header.Get("ratelimit"), ", "))
	}
}
