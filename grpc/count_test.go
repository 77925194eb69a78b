package sluicegrpc_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestCountByCode: a rule that counts Unauthenticated calls only gives
// back what the other calls took, counts a handler that panicked as
// Internal, and refuses the call after its limit of failures, even one
// that would succeed.
func TestCountByCode(t *testing.T) {
	store, clk := fakeStore(t)
	set := rules.MustNew(rules.Rule{
		Name: "failed-logins", Key: keyfunc.ClientIP(), Limit: sluice.PerMinute(3),
		Count: &rules.Count{GRPC: []rules.GRPCCode{rules.GRPCCode(codes.Unauthenticated), rules.GRPCCode(codes.Internal)}},
	})
	l := newLimiter(t, store, set, decide.WithClock(clk))
	// recovered turns a panic into Internal outside the limiter, as a
	// recovery interceptor does; answer fails or panics as the call asks.
	recovered := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (_ any, err error) {
		defer func() {
			if recover() != nil {
				err = status.Error(codes.Internal, "panic")
			}
		}()
		return h(ctx, req)
	}
	answer := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		switch v := md.Get("x-answer"); {
		case len(v) > 0 && v[0] == "deny":
			return nil, status.Error(codes.Unauthenticated, "wrong password")
		case len(v) > 0 && v[0] == "panic":
			panic("handler")
		}
		return h(ctx, req)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(recovered, l.UnaryServerInterceptor(), answer))
	healthpb.RegisterHealthServer(srv, healthService{})
	lis := newAddrListener()
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	c := (&server{tb: t, lis: lis}).client("203.0.113.7:5000")

	steps := []struct {
		answer string
		want   codes.Code
	}{
		{"ok", codes.OK}, {"ok", codes.OK}, {"ok", codes.OK}, {"ok", codes.OK}, // never counted
		{"deny", codes.Unauthenticated}, {"panic", codes.Internal}, {"deny", codes.Unauthenticated}, // three counted
		{"ok", codes.ResourceExhausted}, {"deny", codes.ResourceExhausted},
	}
	for i, s := range steps {
		if got := status.Code(check(t, c, "x-answer", s.answer).err); got != s.want {
			t.Fatalf("call %d (%s): %v, want %v", i+1, s.answer, got, s.want)
		}
	}
}
