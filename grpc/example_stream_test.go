package sluicegrpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
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
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// exampleConn serves srv on an in-memory listener and returns a client
// connection to it, and the function that stops both.
func exampleConn(srv *grpc.Server) (*grpc.ClientConn, func()) {
	lis := bufconn.Listen(1 << 16)
	go func() { _ = srv.Serve(lis) }()
	cc, err := grpc.NewClient("passthrough:///example",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	return cc, func() { _ = cc.Close(); srv.Stop() }
}

// Streams limited message by message: each API key may open 10 streams a
// minute and send 3 messages a minute over all of them. The fourth
// message ends the stream with ResourceExhausted and the exact delay.
func ExampleWithMessageRules() {
	store := memstore.New(memstore.Config{})
	defer store.Close(context.Background())
	opens := rules.MustNew(rules.Rule{Name: "opens", Key: keyfunc.APIKey("x-api-key"), Limit: sluice.PerMinute(10)})
	messages := rules.MustNew(rules.Rule{Name: "messages", Key: keyfunc.APIKey("x-api-key"), Limit: sluice.PerMinute(3)})
	l, err := sluicegrpc.New(store, opens, sluicegrpc.WithMessageRules(messages))
	if err != nil {
		fmt.Println(err)
		return
	}
	// A client-streaming method that counts what it receives.
	count := func(_ any, ss grpc.ServerStream) error {
		n := 0
		for {
			err := ss.RecvMsg(new(wrapperspb.StringValue))
			if errors.Is(err, io.EOF) {
				return ss.SendMsg(wrapperspb.Int64(int64(n)))
			}
			if err != nil {
				return err // a refused message ends the stream
			}
			n++
		}
	}
	cc, stop := exampleConn(grpc.NewServer(grpc.ChainStreamInterceptor(l.StreamServerInterceptor()), grpc.UnknownServiceHandler(count)))
	defer stop()

	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-api-key", "k-123")
	send := func(n int) {
		cs, err := cc.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true}, "/example.Counter/Count")
		if err != nil {
			fmt.Println(err)
			return
		}
		for range n {
			if cs.SendMsg(wrapperspb.String("m")) != nil {
				break // the stream ended: RecvMsg says how
			}
		}
		_ = cs.CloseSend()
		got := new(wrapperspb.Int64Value)
		if err := cs.RecvMsg(got); err != nil {
			delay, _ := sluicegrpc.RetryDelay(err)
			fmt.Println(status.Code(err), "retry in", delay.Round(time.Second), "rule", sluicegrpc.Violations(err)[0].GetQuotaId())
			return
		}
		fmt.Println("received", got.Value)
	}
	send(2)
	send(2)
	// Output:
	// received 2
	// ResourceExhausted retry in 20s rule messages
}

// Calls limited before gRPC decodes them: the tap handle decides each call
// when its headers arrive, on memstore, and the interceptors send the
// rate-limit fields of the calls it admitted. Its refusal carries the
// status and its details, no metadata.
func ExampleLimiter_TapHandle() {
	store := memstore.New(memstore.Config{})
	defer store.Close(context.Background())
	set := rules.MustNew(rules.Rule{Name: "per-key", Key: keyfunc.APIKey("x-api-key"), Limit: sluice.PerMinute(2)})
	l, err := sluicegrpc.New(store, set)
	if err != nil {
		fmt.Println(err)
		return
	}
	tap, err := l.TapHandle() // an error for a store that cannot decide in process
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := grpc.NewServer(
		grpc.InTapHandle(tap),
		grpc.ChainUnaryInterceptor(l.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(l.StreamServerInterceptor()),
	)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	cc, stop := exampleConn(srv)
	defer stop()

	c := healthpb.NewHealthClient(cc)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-api-key", "k-123")
	for range 3 {
		var header metadata.MD
		_, err := c.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header))
		if err != nil {
			delay, _ := sluicegrpc.RetryDelay(err)
			fmt.Println(status.Code(err), "retry in", delay.Round(time.Second), "metadata", len(header))
			continue
		}
		fmt.Println("OK", header.Get("ratelimit"))
	}
	// Output:
	// OK ["per-key";r=1;t=30]
	// OK ["per-key";r=0;t=60]
	// ResourceExhausted retry in 30s metadata 0
}
