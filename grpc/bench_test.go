package sluicegrpc_test

import (
	"context"
	"net"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// transportStream is the server transport stream of a call outside a
// server, so that the interceptor's grpc.SetHeader succeeds.
type transportStream struct{ header, trailer metadata.MD }

func (*transportStream) Method() string                    { return "/grpc.health.v1.Health/Check" }
func (s *transportStream) SetHeader(md metadata.MD) error  { s.header = md; return nil }
func (*transportStream) SendHeader(metadata.MD) error      { return nil }
func (s *transportStream) SetTrailer(md metadata.MD) error { s.trailer = md; return nil }

// BenchmarkUnaryInterceptor measures the unary interceptor on the
// in-process store, outside a server: a call admitted by two rules (per
// IP and per API key), and one refused.
func BenchmarkUnaryInterceptor(b *testing.B) {
	for _, bc := range []struct {
		name  string
		limit sluice.Limit
	}{
		{"admitted", sluice.PerSecond(1_000_000).WithBurst(1_000_000_000)},
		{"refused", sluice.PerHour(1)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			store := memstore.New(memstore.Config{})
			defer store.Close(context.Background())
			set := rules.MustNew(
				rules.Rule{Name: "per-ip", Key: keyfunc.ClientIP(), Limit: bc.limit},
				rules.Rule{Name: "per-key", Key: keyfunc.APIKey("x-api-key"), Limit: bc.limit},
			)
			l := newLimiter(b, store, set)
			ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-api-key", "k-123", "user-agent", "grpc-go"))
			ctx = peer.NewContext(ctx, &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP("203.0.113.7"), Port: 5000}})
			ctx = grpc.NewContextWithServerTransportStream(ctx, &transportStream{})
			intercept := l.UnaryServerInterceptor()
			info := &grpc.UnaryServerInfo{FullMethod: "/grpc.health.v1.Health/Check"}
			handler := func(context.Context, any) (any, error) { return nil, nil }
			_, _ = intercept(ctx, nil, info, handler)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				_, _ = intercept(ctx, nil, info, handler)
			}
		})
	}
}
